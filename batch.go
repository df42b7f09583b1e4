package tablekit

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/wire"
)

// Action is one operation of a [Table.Transaction] or a [BulkWriter]. Build
// it with InsertAction, UpsertAction, UpdateAction, MergeAction or
// DeleteAction, which do what the Table's verbs of the same names do.
//
// There is no delete-if-exists action: an entity group transaction fails as
// a whole when a delete finds nothing. Use [Table.DeleteIfExists] outside a
// transaction for the idempotent delete.
//
// The zero Action is refused.
type Action[T any] struct {
	kind  wire.Verb
	value T
	etag  azcore.ETag // the condition of Update, Merge and Delete
}

// Verb returns what the action does: "Insert", "Upsert", "Update",
// "Merge" or "Delete" ("" for the zero Action, which every write refuses).
func (a Action[T]) Verb() string {
	if a.kind == 0 {
		return ""
	}
	return a.kind.String()
}

// Value returns the value the action writes (for a delete, the value whose
// keys it deletes).
func (a Action[T]) Value() T { return a.value }

// ETag returns the action's condition: the ETag an Update, Merge or Delete
// requires ("" for none, azcore.ETagAny for any version).
func (a Action[T]) ETag() azcore.ETag { return a.etag }

// MapAction returns the action that does what a does (the same verb and
// ETag) with f(v) in place of a's value v: how a package built on tablekit
// turns its callers' actions on their types into actions on the rows it
// stores. f's error is returned as is. The zero Action maps to the zero
// Action (f is not called), which every write refuses.
func MapAction[T, U any](a Action[T], f func(T) (U, error)) (Action[U], error) {
	if a.kind == 0 {
		return Action[U]{}, nil
	}
	u, err := f(a.value)
	if err != nil {
		return Action[U]{}, err
	}
	return Action[U]{kind: a.kind, value: u, etag: a.etag}, nil
}

// InsertAction inserts v; the transaction fails if v's entity exists.
func InsertAction[T any](v T) Action[T] { return Action[T]{kind: wire.Insert, value: v} }

// UpsertAction inserts v or replaces the stored entity with it, as
// [Table.Upsert] does.
func UpsertAction[T any](v T) Action[T] { return Action[T]{kind: wire.Upsert, value: v} }

// UpdateAction replaces the stored entity with v if its ETag equals etag
// (azcore.ETagAny: any version, but the entity must exist), as
// [Table.Update] does. An empty etag is refused before anything is sent.
func UpdateAction[T any](v T, etag azcore.ETag) Action[T] {
	return Action[T]{kind: wire.Update, value: v, etag: etag}
}

// MergeAction merges v's properties into the stored entity, as
// [Table.Merge] does: etag "" inserts v when there is no entity,
// azcore.ETagAny requires one, and any other etag requires that version.
func MergeAction[T any](v T, etag azcore.ETag) Action[T] {
	return Action[T]{kind: wire.Merge, value: v, etag: etag}
}

// DeleteAction deletes the entity with v's keys if its ETag equals etag
// (azcore.ETagAny: any version, but the entity must exist), as
// [Table.Delete] does. An empty etag is refused before anything is sent.
func DeleteAction[T any](v T, etag azcore.ETag) Action[T] {
	return Action[T]{kind: wire.Delete, value: v, etag: etag}
}

// encodeAction validates and encodes one action. The entity's JSON is
// appended to *arena, which many actions share to save allocations; the
// action's body is a slice of it that later appends do not touch.
func (t *Table[T]) encodeAction(op string, a *Action[T], arena *[]byte) (wire.BatchAction, error) {
	ea := wire.BatchAction{Verb: a.kind}
	var err error
	switch a.kind {
	case wire.Delete:
		ea.PK, ea.RK = t.keysOf(&a.value)
		if err := t.checkKeys(ea.PK, ea.RK); err != nil {
			return ea, err
		}
		ea.ETag = a.etag
		if ea.ETag == "" {
			return ea, &ValidationError{Op: op, Entity: describeKeys(t.name, ea.PK, ea.RK), Detail: "DeleteAction needs the ETag read with the entity, or azcore.ETagAny for any version", Err: ErrInvalidInput}
		}
	case wire.Insert, wire.Upsert, wire.Update, wire.Merge:
		start := len(*arena)
		var out []byte
		out, ea.PK, ea.RK, err = t.encode(*arena, &a.value)
		if err != nil {
			return ea, err
		}
		ea.Body = out[start:len(out):len(out)]
		*arena = out
		switch a.kind {
		case wire.Update:
			if a.etag == "" {
				return ea, &ValidationError{Op: op, Entity: describeKeys(t.name, ea.PK, ea.RK), Detail: "UpdateAction needs the ETag read with the entity (or azcore.ETagAny)", Err: ErrInvalidInput}
			}
			ea.ETag = a.etag
		case wire.Merge:
			ea.ETag = a.etag // "": insert or merge
		}
	case 0:
		return ea, &ValidationError{Op: op, Entity: t.name, Detail: "a zero Action (build actions with InsertAction, UpsertAction, UpdateAction, MergeAction or DeleteAction)", Err: ErrInvalidInput}
	default:
		return ea, &ValidationError{Op: op, Entity: t.name, Detail: fmt.Sprintf("unknown action kind %d", a.kind), Err: ErrInvalidInput}
	}
	ea.Size = len(ea.Body) + wire.BatchPartFixed + wire.BatchBaseURLMax + len(t.name) + wire.KeyLiteralLen(ea.PK) + wire.KeyLiteralLen(ea.RK) + len(ea.ETag)
	return ea, nil
}

// Transaction runs the actions as one entity group transaction: all of them
// apply, or none does. Before sending it checks that there are 1–100
// actions, all with one PartitionKey, each entity at most once, at most
// 4 MiB in all, and valid keys and properties; else it returns a
// *ValidationError. On success it returns each action's new ETag, in the
// order of the actions ("" for a delete).
//
// A transaction the service refuses returns a *TransactionError naming the
// index of the failing action; nothing was applied. When an answer was lost
// and the SDK's retry met the state the first try may have left (an insert
// that now exists, an ETag that has moved on), the error matches
// [ErrOutcomeUnknown] rather than the conflict: the transaction may have
// been applied, and not even the stored entities can tell, since another
// writer may have stored the same content.
func (t *Table[T]) Transaction(ctx context.Context, actions ...Action[T]) (etags []azcore.ETag, err error) {
	if err := t.usable(); err != nil {
		return nil, withOp("Transaction", err)
	}
	enc, err := t.encodeTransaction(actions)
	if err != nil {
		return nil, withOp("Transaction", err)
	}
	ctx, end := spans.Start(ctx, t.tracer, "Table.Transaction",
		tracing.Attribute{Key: attrTable, Value: t.name},
		tracing.Attribute{Key: attrPartition, Value: enc[0].PK},
		tracing.Attribute{Key: attrActions, Value: len(enc)})
	defer func() { end(err) }()
	return t.submit(ctx, enc, sendOptions{att: &attempts{}, gov: t.governor})
}

func (t *Table[T]) encodeTransaction(actions []Action[T]) ([]wire.BatchAction, error) {
	if len(actions) == 0 {
		return nil, &ValidationError{Op: "Transaction", Entity: t.name, Detail: "a transaction needs at least one action", Err: ErrInvalidInput}
	}
	if len(actions) > limits.TransactionActions {
		return nil, &ValidationError{Op: "Transaction", Entity: t.name, Limit: "<= 100 actions per transaction", Size: len(actions), Unit: "actions", Detail: "too many actions", Err: ErrTooLarge}
	}
	enc := make([]wire.BatchAction, len(actions))
	seen := make(map[string]int, len(actions))
	total := 0
	arena := make([]byte, 0, 512*len(actions))
	for i := range actions {
		ea, err := t.encodeAction("Transaction", &actions[i], &arena)
		if err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				ve.Op = "Transaction"
				if ve.Detail == "" {
					ve.Detail = fmt.Sprintf("action %d", i)
				} else {
					ve.Detail = fmt.Sprintf("action %d: %s", i, ve.Detail)
				}
				return nil, ve
			}
			return nil, fmt.Errorf("action %d: %w", i, err)
		}
		if i > 0 && ea.PK != enc[0].PK {
			return nil, &ValidationError{Op: "Transaction", Entity: describeKeys(t.name, ea.PK, ea.RK), Property: "PartitionKey", Limit: "one PartitionKey per transaction", Detail: fmt.Sprintf("action %d has PartitionKey %s but action 0 has %s", i, codec.Quote(ea.PK), codec.Quote(enc[0].PK)), Err: ErrInvalidInput}
		}
		if j, dup := seen[ea.RK]; dup {
			return nil, &ValidationError{Op: "Transaction", Entity: describeKeys(t.name, ea.PK, ea.RK), Limit: "each entity once per transaction", Detail: fmt.Sprintf("actions %d and %d address the same entity", j, i), Err: ErrInvalidInput}
		}
		seen[ea.RK] = i
		total += ea.Size
		enc[i] = ea
	}
	if total > t.maxTransactionBytes() {
		limit := "<= 4 MiB per transaction"
		if t.onCosmos() {
			limit = "<= 2 MB per transaction on Azure Cosmos DB for Table"
		}
		return nil, &ValidationError{Op: "Transaction", Entity: t.name, Limit: limit, Size: total, Unit: "bytes", Detail: "transaction too large", Err: ErrTooLarge}
	}
	return enc, nil
}

// sendOptions says how submit sends a transaction.
type sendOptions struct {
	// att records what the transaction's tries left open; a caller that
	// sends the same transaction again passes the same record.
	att *attempts
	// gov, when not nil, is told of every throttled try.
	gov *Governor
	// governed leaves throttled answers to the caller, which paces and
	// repeats the transaction itself (see internal/wire.NewPipelineClient).
	governed bool
}

// submit sends an encoded transaction and returns the actions' ETags.
func (t *Table[T]) submit(ctx context.Context, enc []wire.BatchAction, o sendOptions) ([]azcore.ETag, error) {
	att := o.att
	batch, changeset := wire.Boundaries()
	size := 256
	for i := range enc {
		size += enc[i].Size
	}
	body := wire.AppendBatchBody(make([]byte, 0, size), t.wire.Endpoint(), t.name, batch, changeset, enc, t.wire.MergeTunnel())
	ws := &writeState{table: t.name, pk: enc[0].PK, entities: len(enc), att: att, gov: o.gov}
	resp, answer, err := t.wire.Transaction(ctx, t.name, len(enc), body, batch, wire.Call{Value: ws, OwnThrottling: o.governed})
	if err != nil {
		werr := t.wrapWrite("Transaction", "", "", err, att)
		var se *ServiceError
		if errors.As(werr, &se) {
			// The batch itself was refused (e.g. 413 RequestBodyTooLarge,
			// 403, 503 ServerBusy) or never answered (500, 504). Azure
			// Cosmos DB answers some action failures so too, a top-level
			// 400 whose message still names the action ("3:The batch
			// request contains multiple changes with same row key...").
			return nil, &TransactionError{Index: wire.RefusedIndex(werr, len(enc)), Code: se.Code, Err: werr}
		}
		return nil, werr
	}
	out, ok := wire.ParseBatchResponse(answer, len(enc))
	if !ok {
		// A 202 says the service processed the transaction, but whether
		// it applied it is in the answer it sent: without it, the outcome
		// is unknown, for this call and for a caller that sends the same
		// transaction again.
		att.maybeApplied.Store(true)
		return nil, wire.Unreadable("Transaction",
			fmt.Errorf("%w: a 202 answer of %d bytes that is not the answer to %d actions", wire.ErrUnreadableAnswer, len(answer), len(enc)))
	}
	if !out.Failed {
		return out.ETags, nil
	}
	terr := &TransactionError{
		Index: out.Index,
		Code:  out.Code,
		Err: wire.NewServiceError(out.Status, out.Code, "Transaction", t.name,
			&azcore.ResponseError{StatusCode: resp.StatusCode, ErrorCode: out.Code, RawResponse: resp}),
	}
	if att.maybeApplied.Load() && retryConflict(out.Code) {
		return nil, unsettledTransaction(terr)
	}
	return nil, terr
}
