// Command largeentities shows the large entities pattern: property values
// too large for a table (a 2 MiB photo, a 100,000-character biography)
// stored in blobs and referenced from the entity, with updates (optimistic
// ones too) that never leave a reference to a missing blob and a sweep of
// the blobs a crashed writer left behind.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/largeentities
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// Employee has two fields that may be too large for a table: patterns.Large
// moves them to blobs when they are.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	Name       string      `table:"Name"`
	Bio        string      `table:"Bio"`
	Photo      []byte      `table:"Photo,omitempty"`
	ETag       azcore.ETag `table:",etag"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "largeentities:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "largeentities:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table and a container of its own, uses
// them, and deletes them.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	tbl, err := tablekit.OpenTable[Employee](acct, "Employees"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	cont := acct.Blobs().ServiceClient().NewContainerClient("employees-" + strings.ToLower(rand.Text()[:8]))
	if _, err := cont.Create(ctx, nil); err != nil {
		return fmt.Errorf("CreateContainer: %w", err)
	}
	defer cont.Delete(context.WithoutCancel(ctx), nil)
	// The application's typed table: Large writes its entities through
	// it, and the large values to blobs in cont.
	l, err := patterns.NewLarge(tbl, cont, nil)
	if err != nil {
		return err
	}
	meter := acct.Meter()
	fmt.Fprintf(out, "a property holds at most 64 KiB and an entity 1 MiB; Large moves bigger values to blobs in container %s\n", l.ContainerName())

	photo := make([]byte, 2<<20)
	_, _ = rand.Read(photo)
	emp := Employee{Department: "Sales", ID: "000223", Name: "Ada", Bio: strings.Repeat("Ada wrote the first program. ", 3449)[:100000], Photo: photo}
	before := meter.Snapshot()
	etag, err := l.Upsert(ctx, emp)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Upsert read the references of the version it replaces (none), wrote the blobs, then the entity: %s\n", cost(meter.Snapshot().Sub(before)))
	refs, err := l.Refs(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	for _, name := range []string{"Bio", "Photo"} {
		fmt.Fprintf(out, "  %s -> blob %s (%d bytes)\n", name, refs[name].Blob, refs[name].Size)
	}
	if len(refs) != 2 || refs["Bio"].Size != 100000 || refs["Photo"].Size != 2<<20 {
		return fmt.Errorf("the entity references %v, want Bio (100000 bytes) and Photo (%d bytes)", refs, 2<<20)
	}

	before = meter.Snapshot()
	got, err := l.Get(ctx, "Sales", "000223", nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Get read the entity and both blobs, concurrently: %s\n", cost(meter.Snapshot().Sub(before)))
	if got.Bio != emp.Bio || !bytes.Equal(got.Photo, emp.Photo) || got.ETag != etag {
		return errors.New("the large values (or the ETag Upsert returned) did not round-trip")
	}
	fmt.Fprintln(out, "  the biography and the photo came back intact, with the ETag Upsert returned")
	before = meter.Snapshot()
	light, err := l.Get(ctx, "Sales", "000223", &patterns.LargeGetOptions{SkipBlobs: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Get with SkipBlobs reads only the entity (Name %q, Bio %d chars, Photo %d bytes): %s\n", light.Name, len(light.Bio), len(light.Photo), cost(meter.Snapshot().Sub(before)))

	// A replacement writes its blobs under new names, then the entity,
	// then deletes the blobs of the version it replaced: a crash at any
	// point leaves at worst a blob nobody references, never a reference
	// to a missing blob.
	emp.Photo = photo[:1<<20]
	before = meter.Snapshot()
	etag2, err := l.Upsert(ctx, emp)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "replacing it wrote new blobs, then the entity, then deleted the old blobs: %s\n", cost(meter.Snapshot().Sub(before)))
	newRefs, err := l.Refs(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	if newRefs["Bio"].Blob == refs["Bio"].Blob || newRefs["Photo"].Blob == refs["Photo"].Blob || newRefs["Photo"].Size != 1<<20 {
		return fmt.Errorf("after the replacement the entity references %v", newRefs)
	}

	// Optimistic concurrency: Update replaces the version whose ETag the
	// caller read. It reads the stored version's references first and
	// compares ETags, so a stale ETag costs that read and no blob.
	before = meter.Snapshot()
	if _, err := l.Update(ctx, emp, etag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("an Update with the first version's ETag: want ErrPreconditionFailed, got %v", err)
	}
	fmt.Fprintf(out, "Update with the first version's ETag fails with ErrPreconditionFailed before writing a blob: %s\n", cost(meter.Snapshot().Sub(before)))
	emp.Name = "Ada Lovelace"
	before = meter.Snapshot()
	if _, err := l.Update(ctx, emp, etag2); err != nil {
		return err
	}
	fmt.Fprintf(out, "Update with the current ETag writes as Upsert does, conditional on that version: %s\n", cost(meter.Snapshot().Sub(before)))

	// A writer that died after writing its blob, before its entity: Large
	// names its blobs under its BlobPrefix, by default the table's name
	// and "/".
	orphan := tbl.Name() + "/crashed-upsert/Photo"
	if _, err := cont.NewBlockBlobClient(orphan).UploadBuffer(ctx, photo[:1000], nil); err != nil {
		return fmt.Errorf("PutBlob: %w", err)
	}
	// Sweep lists the blobs, then reads every entity's references: a
	// table scan (tablekit logs a warning), for now and then, not for
	// every request.
	before = meter.Snapshot()
	res, err := l.Sweep(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "a blob left by a crashed Upsert: Sweep with the default 1-hour grace finds %d blobs, %d referenced (the old ones are gone), and deletes %d, since an Upsert may be about to reference a new blob: %s\n",
		res.Blobs, res.Referenced, res.Deleted, cost(meter.Snapshot().Sub(before)))
	if res.Blobs != 3 || res.Referenced != 2 || res.Deleted != 0 {
		return fmt.Errorf("sweep with grace: %+v, want 3 blobs, 2 referenced, none deleted", res)
	}
	// No grace: safe only when no Upsert runs meanwhile, as here.
	res, err = l.Sweep(ctx, &patterns.SweepOptions{MinAge: -1})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Sweep without grace deleted %d blob: %v\n", res.Deleted, res.Orphans)
	if res.Deleted != 1 || !slices.Equal(res.Orphans, []string{orphan}) {
		return fmt.Errorf("sweep without grace: %+v, want %s deleted", res, orphan)
	}

	before = meter.Snapshot()
	existed, err := l.DeleteIfExists(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "DeleteIfExists removed the entity first, then its blobs (existed: %t): %s\n", existed, cost(meter.Snapshot().Sub(before)))
	if _, err := l.Get(ctx, "Sales", "000223", nil); !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("a Get after DeleteIfExists: want ErrNotFound, got %v", err)
	}
	res, err = l.Sweep(ctx, &patterns.SweepOptions{DryRun: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "afterwards Get reports ErrNotFound and the container holds %d blobs\n", res.Blobs)
	if !existed || res.Blobs != 0 {
		return fmt.Errorf("after DeleteIfExists (existed %t): %d blobs left", existed, res.Blobs)
	}
	return nil
}

// cost states what a step cost in storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s %s=%d", c.Service, c.Operation, c.Requests))
	}
	unit := "transactions"
	if s.Total() == 1 {
		unit = "transaction"
	}
	return fmt.Sprintf("%d %s (%s)", s.Total(), unit, strings.Join(ops, ", "))
}
