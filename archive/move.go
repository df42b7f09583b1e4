package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/spans"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
)

// MoveKind is the message kind of archive moves: register a Mover for
// it and send [MoveRequest]s under it.
const MoveKind = "archive.move"

// MoveRequest is the payload of an archive-move message: the keys of the
// entity to move.
//
//	_, err := client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: "Sales", RowKey: "000123"}, nil)
type MoveRequest struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// Mover moves entities from a Current table to an Archive table (and
// optionally also to a blob): the design guide's example of an eventually
// consistent transaction, in four idempotent steps (read from Current,
// upsert into Archive, write the blob copy, delete from Current on the
// version read), so [Mover.Move] can be repeated after a failure at any
// point. Set Current and Archive; the rest is optional.
//
//	mover := &archive.Mover[Employee]{Current: current, Archive: arch}
//	err := archive.HandleFunc(&mux, archive.MoveKind, mover.Handle)
//
// A move costs 3 storage transactions, 4 with the blob copy, 1 when the
// entity is already gone. Its table writes are paced by the Current
// table's Governor (its Account's), and its spans are the Current table's
// Account's. An entity with client-side encrypted properties moves
// encrypted: a Mover that would store a secret in plaintext refuses to
// move. The package doc ("The archive move") tells the details. A Mover is
// safe for concurrent use once configured.
type Mover[T any] struct {
	// Current and Archive are the source and destination tables.
	Current, Archive *tablekit.Table[T]
	// Transform, if set, turns the entity read from Current into the one
	// stored in Archive (it may change the keys, e.g. to partition the
	// archive by year). It must be deterministic.
	Transform func(v T) (T, error)
	// Blobs, if set, also receives a copy of each moved entity, as the
	// guide's step 4 allows (e.g. for cheap long-term storage).
	Blobs *container.Client
	// BlobName names the blob for an entity; nil means "<pk>/<rk>.json"
	// with Current's keys.
	BlobName func(pk, rk string) string
	// EncodeBlob encodes the entity for its blob; nil means json.Marshal,
	// which is refused when Current encrypts properties (the blob would
	// hold their plaintext): then set EncodeBlob, e.g. to encrypt the blob
	// or to leave the secrets out.
	EncodeBlob func(v T) ([]byte, error)
}

// governed runs one table write of one entity of partition pk of table
// through gov (see tablekit.Governor.Do).
func governed(ctx context.Context, gov *tablekit.Governor, table, pk string, write func(ctx context.Context) error) error {
	if gov == nil {
		return write(ctx)
	}
	return gov.Do(ctx, table, pk, 1, write)
}

// check refuses a Mover that is not configured to move safely.
func (m *Mover[T]) check() error {
	const op = "archive.Mover.Move"
	if m == nil || m.Current == nil || m.Archive == nil {
		return &tablekit.ValidationError{Op: op, Detail: "Current and Archive tables are required", Err: tablekit.ErrInvalidInput}
	}
	if m.Current.Name() == "" || m.Archive.Name() == "" {
		return &tablekit.ValidationError{Op: op, Detail: "Current and Archive must be tables made by tablekit.OpenTable", Err: tablekit.ErrInvalidInput}
	}
	secret := m.Current.Encrypted()
	if len(secret) == 0 {
		return nil
	}
	kept := m.Archive.Encrypted()
	for _, p := range secret {
		if !slices.Contains(kept, p) {
			return &tablekit.ValidationError{Op: op, Property: p, Detail: fmt.Sprintf("Current (%s) encrypts %s but Archive (%s) does not: the move would store it in plaintext; give Archive the same Encryption", m.Current.Name(), p, m.Archive.Name()), Err: tablekit.ErrInvalidInput}
		}
	}
	if m.Blobs != nil && m.EncodeBlob == nil {
		return &tablekit.ValidationError{Op: op, Property: "EncodeBlob", Detail: fmt.Sprintf("Current (%s) encrypts %s: the default JSON blob copy would hold the plaintext; set EncodeBlob", m.Current.Name(), strings.Join(secret, ", ")), Err: tablekit.ErrInvalidInput}
	}
	return nil
}

// Move moves the entity pk/rk from Current to Archive. It returns nil when
// the entity is in Archive and not in Current (also when an earlier
// attempt already moved it), and an error when a step failed: repeat the
// call (the worker does, by redelivering the message).
func (m *Mover[T]) Move(ctx context.Context, pk, rk string) (err error) {
	if err := m.check(); err != nil {
		return Permanent(err)
	}
	tr := spans.NewTracer(m.Current.Account().TracingProvider(), spans.TableNamespace(m.Current.Account().Service() == tablekit.ServiceCosmosDB))
	keys := []tracing.Attribute{{Key: "tablekit.partition_key", Value: pk}, {Key: "tablekit.row_key", Value: rk}}
	ctx, end := spans.Start(ctx, tr, "Mover.Move", append(keys, tracing.Attribute{Key: "tablekit.table", Value: m.Current.Name()})...)
	defer func() { end(err) }()
	// step runs one step of the move in a span of its own.
	step := func(name string, f func(ctx context.Context) error) error {
		sctx, end := spans.Start(ctx, tr, name, keys...)
		err := f(sctx)
		end(err)
		return err
	}

	var v T
	err = step("Mover.Read", func(ctx context.Context) (err error) {
		v, err = m.Current.Get(ctx, pk, rk)
		return err
	})
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil // moved by an earlier attempt (or never there)
	}
	if err != nil {
		return fmt.Errorf("archive: Mover.Move: %s/%s: read from %s: %w", pk, rk, m.Current.Name(), err)
	}
	ve, err := m.Current.ToEntity(v)
	if err != nil {
		return fmt.Errorf("archive: Mover.Move: %s/%s: read from %s: %w", pk, rk, m.Current.Name(), err)
	}
	etag := ve.ETag
	out, archivePK := v, pk
	if m.Transform != nil {
		if out, err = m.Transform(v); err != nil {
			return fmt.Errorf("archive: Mover.Move: %s/%s: transform: %w", pk, rk, err)
		}
		if e, err := codec.Encode(out); err == nil {
			archivePK = e.PartitionKey
		}
	}
	gov := m.Current.Account().Governor()
	if err := step("Mover.WriteArchive", func(ctx context.Context) error {
		return governed(ctx, gov, m.Archive.Name(), archivePK, func(ctx context.Context) error {
			_, err := m.Archive.Upsert(ctx, out)
			return err
		})
	}); err != nil {
		return fmt.Errorf("archive: Mover.Move: %s/%s: write to %s: %w", pk, rk, m.Archive.Name(), err)
	}
	if m.Blobs != nil {
		name := pk + "/" + rk + ".json"
		if m.BlobName != nil {
			name = m.BlobName(pk, rk)
		}
		encode := func(v T) ([]byte, error) { return json.Marshal(v) }
		if m.EncodeBlob != nil {
			encode = m.EncodeBlob
		}
		data, err := encode(out)
		if err != nil {
			return Permanent(fmt.Errorf("archive: Mover.Move: %s/%s: encoding blob: %w", pk, rk, err))
		}
		if err := step("Mover.WriteBlob", func(ctx context.Context) error {
			_, err := UpsertBlob(ctx, m.Blobs, name, data)
			return err
		}); err != nil {
			return fmt.Errorf("archive: Mover.Move: %s/%s: write blob %s: %w", pk, rk, name, err)
		}
	}
	if etag == "" {
		etag = azcore.ETagAny
	}
	err = step("Mover.DeleteCurrent", func(ctx context.Context) error {
		return governed(ctx, gov, m.Current.Name(), pk, func(ctx context.Context) error { return m.Current.Delete(ctx, pk, rk, etag) })
	})
	if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("archive: Mover.Move: %s/%s: delete from %s: %w", pk, rk, m.Current.Name(), err)
	}
	return nil
}

// Handle moves the entity a [MoveRequest] names: Move with the shape
// [HandleFunc] takes. A request without keys fails permanently.
func (m *Mover[T]) Handle(ctx context.Context, req MoveRequest) error {
	if req.PartitionKey == "" && req.RowKey == "" {
		return Permanent(invalid("archive.Mover.Handle", "", "the MoveRequest has no keys"))
	}
	return m.Move(ctx, req.PartitionKey, req.RowKey)
}
