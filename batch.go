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
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Limits of one entity group transaction.
const (
	// MaxTransactionActions is the most actions in one transaction.
	MaxTransactionActions = 100
	// MaxTransactionBytes is the largest transaction request body (4 MiB).
	MaxTransactionBytes = 4 * 1024 * 1024
	// transactionActionOverhead bounds the multipart framing, request line
	// and headers each action adds to the body.
	transactionActionOverhead = 1024
)

// ActionKind is what one transaction action does.
type ActionKind uint8

// The kinds of transaction action.
const (
	ActionInsert ActionKind = iota // insert; fails if the entity exists
	ActionUpsert                   // insert or update (Merge or Replace)
	ActionUpdate                   // update an existing entity, ETag-conditional
	ActionDelete                   // delete an existing entity, ETag-conditional
)

// String returns the kind's name, e.g. "Insert".
func (k ActionKind) String() string {
	switch k {
	case ActionInsert:
		return "Insert"
	case ActionUpsert:
		return "Upsert"
	case ActionUpdate:
		return "Update"
	case ActionDelete:
		return "Delete"
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// Action is one operation of a [Table.Transaction] or a [BulkWriter]. Build
// it with InsertAction, UpsertAction, UpdateAction or DeleteAction.
//
// There is no delete-if-exists action: an entity group transaction fails as
// a whole when a delete finds nothing. Use [Table.DeleteIfExists] outside a
// transaction for the idempotent delete.
type Action[T any] struct {
	Kind  ActionKind
	Mode  UpdateMode // for Upsert and Update
	Value T
	// ETag conditions Update and Delete; azcore.ETagAny matches any version
	// of an existing entity.
	ETag azcore.ETag
}

// InsertAction inserts v; the transaction fails if v's entity exists.
func InsertAction[T any](v T) Action[T] { return Action[T]{Kind: ActionInsert, Value: v} }

// UpsertAction inserts v or updates the stored entity (Merge or Replace).
func UpsertAction[T any](v T, mode UpdateMode) Action[T] {
	return Action[T]{Kind: ActionUpsert, Mode: mode, Value: v}
}

// UpdateAction updates the stored entity if its ETag equals etag
// (azcore.ETagAny: any version, but the entity must exist).
func UpdateAction[T any](v T, mode UpdateMode, etag azcore.ETag) Action[T] {
	return Action[T]{Kind: ActionUpdate, Mode: mode, Value: v, ETag: etag}
}

// DeleteAction deletes the entity with v's keys. It is conditional on v's
// ETag when T has an etag field that is set, else it deletes any version;
// either way the entity must exist.
func DeleteAction[T any](v T) Action[T] { return Action[T]{Kind: ActionDelete, Value: v} }

// encodedAction is an action ready for SubmitTransaction.
type encodedAction struct {
	sdk    aztables.TransactionAction
	pk, rk string
	size   int
}

// encodeAction validates and encodes one action.
func (t *Table[T]) encodeAction(a *Action[T]) (encodedAction, error) {
	var ea encodedAction
	var err error
	var data []byte
	switch a.Kind {
	case ActionDelete:
		ea.pk, ea.rk = t.keysOf(&a.Value)
		if err := t.checkKeys(ea.pk, ea.rk); err != nil {
			return ea, err
		}
		// A delete sends no body: the keys only build the request URL, in
		// which the SDK does not double single quotes itself.
		data = appendKeys(nil, strings.ReplaceAll(ea.pk, "'", "''"), strings.ReplaceAll(ea.rk, "'", "''"))
		data = append(data, '}')
		etag := a.ETag
		if etag == "" {
			etag = t.etagOf(&a.Value)
		}
		if etag == "" {
			etag = azcore.ETagAny
		}
		ea.sdk = aztables.TransactionAction{ActionType: aztables.TransactionTypeDelete, Entity: data, IfMatch: &etag}
	case ActionInsert, ActionUpsert, ActionUpdate:
		data, ea.pk, ea.rk, err = t.encode(nil, &a.Value)
		if err != nil {
			return ea, err
		}
		ea.sdk.Entity = data
		switch {
		case a.Kind == ActionInsert:
			ea.sdk.ActionType = aztables.TransactionTypeAdd
		case a.Kind == ActionUpsert && a.Mode == Merge:
			ea.sdk.ActionType = aztables.TransactionTypeInsertMerge
		case a.Kind == ActionUpsert:
			ea.sdk.ActionType = aztables.TransactionTypeInsertReplace
		case a.Mode == Merge:
			ea.sdk.ActionType = aztables.TransactionTypeUpdateMerge
		default:
			ea.sdk.ActionType = aztables.TransactionTypeUpdateReplace
		}
		if a.Kind == ActionUpdate {
			etag := a.ETag
			if etag == "" {
				return ea, &ValidationError{Entity: describeKeys(t.name, ea.pk, ea.rk), Detail: "UpdateAction needs the ETag read with the entity (or azcore.ETagAny)", Err: ErrInvalidInput}
			}
			ea.sdk.IfMatch = &etag
		}
		if a.Kind != ActionInsert && (strings.ContainsRune(ea.pk, '\'') || strings.ContainsRune(ea.rk, '\'')) {
			return ea, &ValidationError{Entity: describeKeys(t.name, ea.pk, ea.rk), Detail: "the Azure SDK for Go cannot address a key containing ' in a transaction's update or upsert; use Table.Update or Table.Upsert for this entity", Err: ErrInvalidKey}
		}
	default:
		return ea, &ValidationError{Entity: t.name, Detail: fmt.Sprintf("unknown action kind %d", a.Kind), Err: ErrInvalidInput}
	}
	if a.Kind != ActionInsert {
		if err := t.checkAddressable(a.Kind.String(), ea.pk, ea.rk); err != nil {
			return ea, err
		}
	}
	ea.size = len(data) + transactionActionOverhead
	return ea, nil
}

// Transaction runs the actions as one entity group transaction: all of them
// apply, or none does. Before sending it checks that there are 1–100
// actions, all with one PartitionKey, each entity at most once, at most
// 4 MiB in all, and valid keys and properties; else it returns a
// *ValidationError. A transaction the service refuses returns a
// *TransactionError naming the index of the failing action.
func (t *Table[T]) Transaction(ctx context.Context, actions ...Action[T]) error {
	enc, err := t.encodeTransaction(actions)
	if err != nil {
		return err
	}
	return t.submit(ctx, enc)
}

func (t *Table[T]) encodeTransaction(actions []Action[T]) ([]encodedAction, error) {
	if len(actions) == 0 {
		return nil, &ValidationError{Entity: t.name, Detail: "a transaction needs at least one action", Err: ErrInvalidInput}
	}
	if len(actions) > MaxTransactionActions {
		return nil, &ValidationError{Entity: t.name, Limit: "<= 100 actions per transaction", Size: len(actions), Detail: "too many actions", Err: ErrTooLarge}
	}
	enc := make([]encodedAction, len(actions))
	seen := make(map[string]int, len(actions))
	total := 0
	for i := range actions {
		ea, err := t.encodeAction(&actions[i])
		if err != nil {
			return nil, fmt.Errorf("action %d: %w", i, err)
		}
		if i > 0 && ea.pk != enc[0].pk {
			return nil, &ValidationError{Entity: describeKeys(t.name, ea.pk, ea.rk), Property: "PartitionKey", Limit: "one PartitionKey per transaction", Detail: fmt.Sprintf("action %d has PartitionKey %s but action 0 has %s", i, quoteForError(ea.pk), quoteForError(enc[0].pk)), Err: ErrInvalidInput}
		}
		if j, dup := seen[ea.rk]; dup {
			return nil, &ValidationError{Entity: describeKeys(t.name, ea.pk, ea.rk), Limit: "each entity once per transaction", Detail: fmt.Sprintf("actions %d and %d address the same entity", j, i), Err: ErrInvalidInput}
		}
		seen[ea.rk] = i
		total += ea.size
		enc[i] = ea
	}
	if total > MaxTransactionBytes {
		return nil, &ValidationError{Entity: t.name, Limit: "<= 4 MiB per transaction", Size: total, Detail: "transaction too large", Err: ErrTooLarge}
	}
	return enc, nil
}

func (t *Table[T]) submit(ctx context.Context, enc []encodedAction) error {
	sdk := make([]aztables.TransactionAction, len(enc))
	for i := range enc {
		sdk[i] = enc[i].sdk
	}
	_, err := t.client.SubmitTransaction(ctx, sdk, nil)
	if err == nil {
		return nil
	}
	return transactionError(err)
}

// transactionError turns a failed SubmitTransaction into a
// *TransactionError, reading the failing action's index and code from the
// response body.
func transactionError(err error) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return WrapError("Transaction", err)
	}
	if re.StatusCode != http.StatusAccepted || re.RawResponse == nil {
		// The batch itself was refused (e.g. 413 RequestBodyTooLarge).
		se := WrapError("Transaction", err)
		return &TransactionError{Index: -1, Code: re.ErrorCode, Err: se}
	}
	payload, _ := runtime.Payload(re.RawResponse)
	status, code, index := parseBatchError(payload)
	return &TransactionError{
		Index: index,
		Code:  code,
		Err: &ServiceError{
			StatusCode: status,
			Code:       code,
			Op:         "Transaction",
			sentinel:   sentinelFor(status, code),
			resp:       re,
		},
	}
}

// parseBatchError reads the inner status, error code and action index from
// a failed batch response: a multipart body whose failing part is an HTTP
// response with an OData error, or that OData error alone.
func parseBatchError(payload []byte) (status int, code string, index int) {
	index = -1
	if i := bytes.Index(payload, []byte("HTTP/1.1 ")); i >= 0 && len(payload) >= i+12 {
		status, _ = strconv.Atoi(string(payload[i+9 : i+12]))
	}
	start := bytes.Index(payload, []byte(`{"odata.error"`))
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
