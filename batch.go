package tablekit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/wire"
)

// actionKind is what one transaction action does; 0 is none (a zero
// Action).
type actionKind uint8

// The kinds of transaction action, one per write verb of [Table].
const (
	actInsert actionKind = iota + 1 // insert; fails if the entity exists
	actUpsert                       // insert or replace
	actUpdate                       // replace an existing entity, ETag-conditional
	actMerge                        // merge into the entity; ETag-conditional unless ""
	actDelete                       // delete an existing entity, ETag-conditional
)

// String returns the kind's name, e.g. "Insert".
func (k actionKind) String() string {
	switch k {
	case actInsert:
		return "Insert"
	case actUpsert:
		return "Upsert"
	case actUpdate:
		return "Update"
	case actMerge:
		return "Merge"
	case actDelete:
		return "Delete"
	}
	return fmt.Sprintf("actionKind(%d)", uint8(k))
}

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
	kind  actionKind
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

// InsertAction inserts v; the transaction fails if v's entity exists.
func InsertAction[T any](v T) Action[T] { return Action[T]{kind: actInsert, value: v} }

// UpsertAction inserts v or replaces the stored entity with it, as
// [Table.Upsert] does.
func UpsertAction[T any](v T) Action[T] { return Action[T]{kind: actUpsert, value: v} }

// UpdateAction replaces the stored entity with v if its ETag equals etag
// (azcore.ETagAny: any version, but the entity must exist), as
// [Table.Update] does. An empty etag is refused before anything is sent.
func UpdateAction[T any](v T, etag azcore.ETag) Action[T] {
	return Action[T]{kind: actUpdate, value: v, etag: etag}
}

// MergeAction merges v's properties into the stored entity, as
// [Table.Merge] does: etag "" inserts v when there is no entity,
// azcore.ETagAny requires one, and any other etag requires that version.
func MergeAction[T any](v T, etag azcore.ETag) Action[T] {
	return Action[T]{kind: actMerge, value: v, etag: etag}
}

// DeleteAction deletes the entity with v's keys if its ETag equals etag
// (azcore.ETagAny: any version, but the entity must exist), as
// [Table.Delete] does. An empty etag is refused before anything is sent.
func DeleteAction[T any](v T, etag azcore.ETag) Action[T] {
	return Action[T]{kind: actDelete, value: v, etag: etag}
}

// encodedAction is an action validated and encoded, ready to send.
type encodedAction struct {
	kind   actionKind
	pk, rk string
	etag   azcore.ETag // If-Match; "" for none
	body   []byte      // the entity's OData JSON; nil for a delete
	size   int         // bytes the action adds to a transaction body, at most
}

// encodeAction validates and encodes one action. The entity's JSON is
// appended to *arena, which many actions share to save allocations; the
// action's body is a slice of it that later appends do not touch.
func (t *Table[T]) encodeAction(op string, a *Action[T], arena *[]byte) (encodedAction, error) {
	ea := encodedAction{kind: a.kind}
	var err error
	switch a.kind {
	case actDelete:
		ea.pk, ea.rk = t.keysOf(&a.value)
		if err := t.checkKeys(ea.pk, ea.rk); err != nil {
			return ea, err
		}
		ea.etag = a.etag
		if ea.etag == "" {
			return ea, &ValidationError{Op: op, Entity: describeKeys(t.name, ea.pk, ea.rk), Detail: "DeleteAction needs the ETag read with the entity, or azcore.ETagAny for any version", Err: ErrInvalidInput}
		}
	case actInsert, actUpsert, actUpdate, actMerge:
		start := len(*arena)
		var out []byte
		out, ea.pk, ea.rk, err = t.encode(*arena, &a.value)
		if err != nil {
			return ea, err
		}
		ea.body = out[start:len(out):len(out)]
		*arena = out
		switch a.kind {
		case actUpdate:
			if a.etag == "" {
				return ea, &ValidationError{Op: op, Entity: describeKeys(t.name, ea.pk, ea.rk), Detail: "UpdateAction needs the ETag read with the entity (or azcore.ETagAny)", Err: ErrInvalidInput}
			}
			ea.etag = a.etag
		case actMerge:
			ea.etag = a.etag // "": insert or merge
		}
	case 0:
		return ea, &ValidationError{Op: op, Entity: t.name, Detail: "a zero Action (build actions with InsertAction, UpsertAction, UpdateAction, MergeAction or DeleteAction)", Err: ErrInvalidInput}
	default:
		return ea, &ValidationError{Op: op, Entity: t.name, Detail: fmt.Sprintf("unknown action kind %d", a.kind), Err: ErrInvalidInput}
	}
	ea.size = len(ea.body) + batchPartFixed + batchBaseURLMax + len(t.name) + wire.KeyLiteralLen(ea.pk) + wire.KeyLiteralLen(ea.rk) + len(ea.etag)
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
		tracing.Attribute{Key: attrPartition, Value: enc[0].pk},
		tracing.Attribute{Key: attrActions, Value: len(enc)})
	defer func() { end(err) }()
	return t.submit(ctx, enc, sendOptions{att: &attempts{}, gov: t.governor})
}

func (t *Table[T]) encodeTransaction(actions []Action[T]) ([]encodedAction, error) {
	if len(actions) == 0 {
		return nil, &ValidationError{Op: "Transaction", Entity: t.name, Detail: "a transaction needs at least one action", Err: ErrInvalidInput}
	}
	if len(actions) > limits.TransactionActions {
		return nil, &ValidationError{Op: "Transaction", Entity: t.name, Limit: "<= 100 actions per transaction", Size: len(actions), Unit: "actions", Detail: "too many actions", Err: ErrTooLarge}
	}
	enc := make([]encodedAction, len(actions))
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
		if i > 0 && ea.pk != enc[0].pk {
			return nil, &ValidationError{Op: "Transaction", Entity: describeKeys(t.name, ea.pk, ea.rk), Property: "PartitionKey", Limit: "one PartitionKey per transaction", Detail: fmt.Sprintf("action %d has PartitionKey %s but action 0 has %s", i, codec.Quote(ea.pk), codec.Quote(enc[0].pk)), Err: ErrInvalidInput}
		}
		if j, dup := seen[ea.rk]; dup {
			return nil, &ValidationError{Op: "Transaction", Entity: describeKeys(t.name, ea.pk, ea.rk), Limit: "each entity once per transaction", Detail: fmt.Sprintf("actions %d and %d address the same entity", j, i), Err: ErrInvalidInput}
		}
		seen[ea.rk] = i
		total += ea.size
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
	// repeats the transaction itself (see newTableWire).
	governed bool
}

// submit sends an encoded transaction and returns the actions' ETags.
func (t *Table[T]) submit(ctx context.Context, enc []encodedAction, o sendOptions) ([]azcore.ETag, error) {
	att := o.att
	batch, changeset := boundaries()
	size := 256
	for i := range enc {
		size += enc[i].size
	}
	body := appendBatchBody(make([]byte, 0, size), t.wire.Endpoint(), t.name, batch, changeset, enc, t.wire.MergeTunnel())
	ws := &writeState{table: t.name, pk: enc[0].pk, entities: len(enc), att: att, gov: o.gov}
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
			return nil, &TransactionError{Index: refusedIndex(werr, len(enc)), Code: se.Code, Err: werr}
		}
		return nil, werr
	}
	out, ok := parseBatchResponse(answer, len(enc))
	if !ok {
		// A 202 says the service processed the transaction, but whether
		// it applied it is in the answer it sent: without it, the outcome
		// is unknown, for this call and for a caller that sends the same
		// transaction again.
		att.maybeApplied.Store(true)
		return nil, wire.Unreadable("Transaction",
			fmt.Errorf("%w: a 202 answer of %d bytes that is not the answer to %d actions", wire.ErrUnreadableAnswer, len(answer), len(enc)))
	}
	if !out.failed {
		return out.etags, nil
	}
	terr := &TransactionError{
		Index: out.index,
		Code:  out.code,
		Err: wire.NewServiceError(out.status, out.code, "Transaction", t.name,
			&azcore.ResponseError{StatusCode: resp.StatusCode, ErrorCode: out.code, RawResponse: resp}),
	}
	if att.maybeApplied.Load() && retryConflict(out.code) {
		return nil, unsettledTransaction(terr)
	}
	return nil, terr
}

// refusedIndex returns the index of the action a transaction of n actions
// refused as a whole names in its error message ("3:..."), or -1.
func refusedIndex(err error, n int) int {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return -1
	}
	payload, perr := runtime.Payload(re.RawResponse)
	if perr != nil {
		return -1
	}
	if _, _, i := parseBatchError(payload); i < n {
		return i
	}
	return -1
}

// parseBatchError reads the inner status, error code and action index from
// a failed batch response: a multipart body whose failing part is an HTTP
// response with an OData error, or that OData error alone.
func parseBatchError(payload []byte) (status int, code string, index int) {
	index = -1
	if i := bytes.Index(payload, []byte("HTTP/1.1 ")); i >= 0 && len(payload) >= i+12 {
		status, _ = strconv.Atoi(string(payload[i+9 : i+12]))
	}
	start := odataErrorStart(payload)
	if start < 0 {
		return status, code, index
	}
	var body struct {
		Err struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.NewDecoder(bytes.NewReader(payload[start:])).Decode(&body); err != nil {
		return status, code, index
	}
	code = body.Err.Code
	if n, _, ok := strings.Cut(body.Err.Message.Value, ":"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			index = i
		}
	}
	if status == 0 {
		status = statusForCode(code)
	}
	return status, code, index
}

// odataErrorStart returns the offset of the JSON object that holds the
// "odata.error" member in payload, whatever whitespace JSON allows between
// its brace and the member, or -1.
func odataErrorStart(payload []byte) int {
	i := bytes.Index(payload, []byte(`"odata.error"`))
	if i < 0 {
		return -1
	}
	j := bytes.LastIndexByte(payload[:i], '{')
	if j < 0 || len(bytes.TrimSpace(payload[j+1:i])) != 0 {
		return -1
	}
	return j
}

// statusForCode gives the HTTP status of common batch error codes when the
// body does not carry one.
func statusForCode(code string) int {
	switch code {
	case "EntityAlreadyExists", "TableAlreadyExists":
		return http.StatusConflict
	case "ResourceNotFound", "TableNotFound":
		return http.StatusNotFound
	case "UpdateConditionNotSatisfied", "ConditionNotMet":
		return http.StatusPreconditionFailed
	case "RequestBodyTooLarge", "EntityTooLarge":
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}
