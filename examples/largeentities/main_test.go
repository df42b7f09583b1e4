package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
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
		"(100000 bytes)",
		"(2097152 bytes)",
		"Get read the entity and both blobs, concurrently: 3 transactions (blob GetBlob=2, table GetEntity=1)",
		"the biography and the photo came back intact, with the ETag Upsert returned",
		`Get with SkipBlobs reads only the entity (Name "Ada", Bio 0 chars, Photo 0 bytes): 1 transaction (table GetEntity=1)`,
		"replacing it wrote new blobs, then the entity, then deleted the old blobs: 6 transactions (blob DeleteBlob=2, blob PutBlob=2, table GetEntity=1, table UpdateEntity=1)",
		"Update with the first version's ETag fails with ErrPreconditionFailed before writing a blob: 1 transaction (table GetEntity=1)",
		"Update with the current ETag writes as Upsert does, conditional on that version: 6 transactions (blob DeleteBlob=2, blob PutBlob=2, table GetEntity=1, table UpdateEntity=1)",
		"Sweep with the default 1-hour grace finds 3 blobs, 2 referenced (the old ones are gone), and deletes 0",
		"Sweep without grace deleted 1 blob: [",
		"/crashed-upsert/Photo]",
		"DeleteIfExists removed the entity first, then its blobs (existed: true): 4 transactions (blob DeleteBlob=2, table DeleteEntity=1, table GetEntity=1)",
		"afterwards Get reports ErrNotFound and the container holds 0 blobs",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
