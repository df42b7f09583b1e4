package tablekit

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Store is the verbs every typed store of tablekit shares: [Table], the
// secondary indexes of package index and the wide and large entities of
// package patterns. Write code over any of them, and fake it in tests.
//
// Writes replace: Upsert and Update store exactly v's properties. An
// Update or Delete needs the ETag read with the entity (azcore.ETagAny for
// any version); an empty ETag is refused before anything is sent. Errors
// match [ErrNotFound], [ErrAlreadyExists] and [ErrPreconditionFailed] as
// the verbs of Table describe.
type Store[T any] interface {
	// Get reads one entity (ErrNotFound when there is none).
	Get(ctx context.Context, pk, rk string) (T, error)
	// Insert adds v (ErrAlreadyExists when its entity exists).
	Insert(ctx context.Context, v T) (azcore.ETag, error)
	// Upsert inserts v or replaces the stored entity with it.
	Upsert(ctx context.Context, v T) (azcore.ETag, error)
	// Update replaces the stored entity with v if it is at etag.
	Update(ctx context.Context, v T, etag azcore.ETag) (azcore.ETag, error)
	// Modify reads the entity, calls fn and replaces it on the version
	// read, trying again when another writer got in between.
	Modify(ctx context.Context, pk, rk string, fn func(v *T) error) (T, error)
	// Delete deletes the entity if it is at etag.
	Delete(ctx context.Context, pk, rk string, etag azcore.ETag) error
	// DeleteIfExists deletes the entity whatever its version and reports
	// whether it existed.
	DeleteIfExists(ctx context.Context, pk, rk string) (bool, error)
}

var _ Store[Entity] = (*Table[Entity])(nil)
