package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"Upsert read the references of the version it replaces (none), wrote the blobs, then the entity: 4 transactions (blob PutBlob=2, table GetEntity=1, table InsertEntity=1)",
		`"size":100000`,
		`"size":2097152`,
		"Get read the entity and both blobs, concurrently: 3 transactions (blob GetBlob=2, table GetEntity=1); the biography and the photo came back intact, with the ETag Upsert returned: true",
		`a query selecting Name reads only the entity (Name "Ada", Bio 0 chars, Photo 0 bytes): 1 transaction (table QueryEntities=1)`,
		"replacing it wrote new blobs, then the entity, then deleted the old blobs: 6 transactions (blob DeleteBlob=2, blob PutBlob=2, table GetEntity=1, table UpdateEntity=1)",
		"Update with the current ETag writes as Upsert does, conditional on that version: 6 transactions (blob DeleteBlob=2, blob PutBlob=2, table GetEntity=1, table UpdateEntity=1)",
		"DeleteIfExists removed the entity first, then its blobs (existed: true): 4 transactions (blob DeleteBlob=2, table DeleteEntity=1, table GetEntity=1)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

// TestStaleUpdateAndSweep: an Update with a stale ETag is refused after
// reading the references, before writing any blob; a blob a crashed
// writer left (written, its entity never) survives a Sweep within the
// grace period and goes in one without it; after DeleteIfExists, Get
// reports ErrNotFound and no blob is left.
func TestStaleUpdateAndSweep(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	l, tbl, cont, drop, err := setup(ctx, acct)
	defer drop()
	if err != nil {
		t.Fatal(err)
	}
	emp := Employee{Department: "Sales", ID: "000223", Name: "Ada", Photo: bytes.Repeat([]byte{7}, 100_000)}
	first, err := l.Upsert(ctx, emp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Upsert(ctx, emp); err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	if _, err := l.Update(ctx, emp, first); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("an Update with the first version's ETag: want ErrPreconditionFailed, got %v", err)
	}
	if c := acct.Meter().Snapshot().Sub(before); c.Total() != 1 || c.Count("table", "GetEntity") != 1 {
		t.Fatalf("a stale Update cost %v, want the one read of the references", c)
	}

	// A writer that died after writing its blob, before its entity
	// (Large names blobs under the table's name and "/").
	orphan := tbl.Name() + "/crashed-upsert/Photo"
	if _, err := cont.NewBlockBlobClient(orphan).UploadBuffer(ctx, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if deleted, err := l.Sweep(ctx, nil); err != nil || len(deleted) != 0 || len(blobs(t, cont)) != 2 {
		t.Fatalf("a Sweep within the 1-hour grace deleted %v (%v); want nothing, 2 blobs left", deleted, err)
	}
	deleted, err := l.Sweep(ctx, &patterns.SweepOptions{MinAge: -1}) // no grace: no writer runs now
	if err != nil || !slices.Equal(deleted, []string{orphan}) || len(blobs(t, cont)) != 1 {
		t.Fatalf("a Sweep without grace deleted %v (%v); want %s", deleted, err, orphan)
	}

	if existed, err := l.DeleteIfExists(ctx, "Sales", "000223"); err != nil || !existed {
		t.Fatal(existed, err)
	}
	if _, err := l.Get(ctx, "Sales", "000223"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("a Get after DeleteIfExists: want ErrNotFound, got %v", err)
	}
	if left := blobs(t, cont); len(left) != 0 {
		t.Fatalf("blobs left after DeleteIfExists: %v", left)
	}
}

// blobs lists the container's blobs.
func blobs(t *testing.T, cont *container.Client) []string {
	var names []string
	pager := cont.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	return names
}
