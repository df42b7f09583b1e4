package tablekit

import (
	"context"
	"errors"
	"log/slog"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/hook"
	"github.com/tablekit/tablekit/internal/opname"
	"github.com/tablekit/tablekit/internal/wire"
)

// The root lends these internals to its sibling packages through
// internal/hook (see its package doc); internal/core gives them their
// types back. Nothing here is reachable from outside the module.
func init() {
	opname.Register(func(op string, err error) { codec.WithOp(op, err) })

	hook.GetSelect = func(ctx context.Context, table any, pk, rk string, props []string, dst any) error {
		return table.(tableInternals).getSelect(ctx, pk, rk, props, dst)
	}
	hook.ToEntity = func(table, v any) (any, error) { return table.(tableInternals).toEntityAny(v) }
	hook.FromEntity = func(table, e, dst any) error { return table.(tableInternals).fromEntityInto(e.(Entity), dst) }
	hook.ETagOf = func(table, v any) azcore.ETag { return table.(tableInternals).etagOfAny(v) }
	hook.TableInfo = func(table any) hook.Table { return table.(tableInternals).info() }
	hook.CheckTransaction = func(table, actions any) error {
		err := table.(tableInternals).checkTransaction(actions)
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Op = ""
		}
		return err
	}
	hook.PaceBulkWriter = func(writer, gov any, logger *slog.Logger) {
		writer.(interface{ pace(*Governor, *slog.Logger) }).pace(gov.(*Governor), logger)
	}

	hook.AccountInfo = func(acct any) hook.Account {
		a := acct.(*Account)
		if a == nil {
			return hook.Account{}
		}
		return hook.Account{
			Name: a.name, TableURL: a.endpoints.Table, QueueURL: a.endpoints.Queue, BlobURL: a.endpoints.Blob,
			Tracing: a.tracing, Governor: a.governor, Logger: a.logger, Cosmos: a.svc.cosmos(),
		}
	}

	hook.ItemsFailed = func(err error) bool {
		var be *bulkError
		return errors.As(err, &be)
	}
	hook.WrapError = func(op string, err error) error { return wrapError(op, "", "", "", err) }
	hook.Throttled = wire.IsThrottled
	hook.ActionOf = func(action any) (string, any, azcore.ETag) {
		kind, v, etag := action.(interface {
			parts() (actionKind, any, azcore.ETag)
		}).parts()
		if kind == 0 {
			return "", v, etag
		}
		return kind.String(), v, etag
	}
	hook.GovernorWait = func(gov any, ctx context.Context, table, pk string, entities int) error {
		return gov.(*Governor).wait(ctx, table, pk, entities)
	}
	hook.GovernorDone = func(gov any, table, pk string, entities int, err error) {
		gov.(*Governor).done(table, pk, entities, err)
	}
	hook.GovernorRate = func(gov any, table, pk string) float64 { return gov.(*Governor).rate(table, pk) }
}

// tableInternals is what every Table[T] lends to internal/hook, whatever
// its T.
type tableInternals interface {
	getSelect(ctx context.Context, pk, rk string, props []string, dst any) error
	toEntityAny(v any) (any, error)
	fromEntityInto(e Entity, dst any) error
	etagOfAny(v any) azcore.ETag
	info() hook.Table
	checkTransaction(actions any) error
}

// getSelect is Get projected to props, decoding into dst, a *T.
func (t *Table[T]) getSelect(ctx context.Context, pk, rk string, props []string, dst any) error {
	if err := t.usable(); err != nil {
		return err
	}
	if err := t.checkKeys(pk, rk); err != nil {
		return err
	}
	sel, err := selectText(props)
	if err != nil {
		return err
	}
	if sel == "" {
		sel = "PartitionKey,RowKey"
	}
	e, err := t.read(ctx, "Get", pk, rk, sel)
	if err != nil {
		return err
	}
	v := dst.(*T)
	if err := t.decode("", e.Body, v); err != nil {
		return err
	}
	t.setETag(v, e.ETag)
	return nil
}

func (t *Table[T]) toEntityAny(v any) (any, error) {
	if err := t.usable(); err != nil {
		return Entity{}, err
	}
	return t.codec.ToEntity(v.(T), t.onCosmos())
}

func (t *Table[T]) fromEntityInto(e Entity, dst any) error {
	if err := t.usable(); err != nil {
		return err
	}
	v, err := t.codec.FromEntity(e)
	*dst.(*T) = v
	return err
}

func (t *Table[T]) etagOfAny(v any) azcore.ETag {
	if t.usable() != nil {
		return ""
	}
	tv := v.(T)
	return t.etagOf(&tv)
}

// checkTransaction checks actions, a []Action[T], as Transaction does
// before sending, and sends nothing.
func (t *Table[T]) checkTransaction(actions any) error {
	if err := t.usable(); err != nil {
		return err
	}
	_, err := t.encodeTransaction(actions.([]Action[T]))
	return err
}

func (t *Table[T]) info() hook.Table {
	if t == nil {
		return hook.Table{}
	}
	names := t.codec.Encrypted()
	return hook.Table{Account: t.account, Tracer: t.tracer, Governor: t.governor, Meter: t.meter, Cosmos: t.onCosmos(), Encrypted: names, Retry: t.retry, Logger: t.logger}
}

// parts returns the verb, value and ETag of a (internal/hook.ActionOf).
func (a Action[T]) parts() (actionKind, any, azcore.ETag) { return a.kind, a.value, a.etag }

// pace makes w pace its transactions with gov and log to logger (see
// internal/core.BulkWriter); a nil gov keeps the Account's.
func (w *BulkWriter[T]) pace(gov *Governor, logger *slog.Logger) {
	if gov != nil {
		w.gov = gov
	}
	w.logger = logger
}
