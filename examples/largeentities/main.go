// Command largeentities shows the large entities pattern: values too large
// for a table (a property holds 64 KiB, an entity 1 MiB: here a 2 MiB photo
// and a 100,000-character biography) stored in blobs the entity references,
// with updates that never leave a reference to a missing blob.
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
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// Employee has two fields that may be too large for a table.
type Employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name, Bio  string
	Photo      []byte      `table:"Photo,omitempty"`
	ETag       azcore.ETag `table:",etag"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err == nil {
		var acct *tablekit.Account
		if acct, err = tablekit.Open(conn, nil); err == nil {
			err = run(ctx, acct, os.Stdout)
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "largeentities:", err)
		os.Exit(1)
	}
}

// setup creates a table and a container of its own (drop deletes them) and
// the Large that writes the application's typed table.
func setup(ctx context.Context, acct *tablekit.Account) (l *patterns.Large[Employee], tbl *tablekit.Table[Employee], cont *container.Client, drop func(), err error) {
	cont = acct.Blobs().ServiceClient().NewContainerClient("employees-" + strings.ToLower(rand.Text()[:8]))
	tbl, err = tablekit.OpenTable[Employee](acct, "Employees"+rand.Text()[:8], nil)
	if err == nil {
		err = tbl.CreateIfNotExists(ctx)
	}
	if err == nil {
		_, err = cont.Create(ctx, nil)
	}
	drop = func() {
		_ = tbl.DeleteTable(context.WithoutCancel(ctx))
		_, _ = cont.Delete(context.WithoutCancel(ctx), nil)
	}
	if err == nil {
		l, err = patterns.NewLarge(tbl, cont, nil) // large values to blobs in cont
	}
	return l, tbl, cont, drop, err
}

// run is the example.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	l, tbl, _, drop, err := setup(ctx, acct)
	defer drop()
	if err != nil {
		return err
	}
	meter := acct.Meter()
	photo := make([]byte, 2<<20)
	_, _ = rand.Read(photo)
	emp := Employee{Department: "Sales", ID: "000223", Name: "Ada", Bio: strings.Repeat("Ada wrote the first program. ", 3449)[:100000], Photo: photo}
	before := meter.Snapshot()
	etag, err := l.Upsert(ctx, emp)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Upsert read the references of the version it replaces (none), wrote the blobs, then the entity: %s\n", cost(meter.Snapshot().Sub(before)))
	// The stored entity keeps the references in its LargeBlobs property.
	raw, err := tbl.AsEntities().Get(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  the entity holds Name and LargeBlobs = %s\n", raw.Properties["LargeBlobs"])
	before = meter.Snapshot()
	got, err := l.Get(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Get read the entity and both blobs, concurrently: %s; the biography and the photo came back intact, with the ETag Upsert returned: %t\n",
		cost(meter.Snapshot().Sub(before)), got.Bio == emp.Bio && bytes.Equal(got.Photo, emp.Photo) && got.ETag == etag)

	// A projected read reads only the blobs of the properties selected.
	before = meter.Snapshot()
	for e, err := range l.Query(ctx, tablekit.PointQuery("Sales", "000223"), &tablekit.QueryOptions{Select: []string{"Name"}}) {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "a query selecting Name reads only the entity (Name %q, Bio %d chars, Photo %d bytes): %s\n", e.Name, len(e.Bio), len(e.Photo), cost(meter.Snapshot().Sub(before)))
	}

	// A replacement writes new blobs, then the entity, then deletes the old
	// blobs: a crash leaves at worst a blob nobody references (Sweep
	// removes those), never a reference to a missing blob.
	emp.Photo = photo[:1<<20]
	before = meter.Snapshot()
	if etag, err = l.Upsert(ctx, emp); err != nil {
		return err
	}
	fmt.Fprintf(out, "replacing it wrote new blobs, then the entity, then deleted the old blobs: %s\n", cost(meter.Snapshot().Sub(before)))

	// Update replaces the version whose ETag the caller read (a stale one
	// is refused before any blob is written).
	emp.Name = "Ada Lovelace"
	before = meter.Snapshot()
	if _, err := l.Update(ctx, emp, etag); err != nil {
		return err
	}
	fmt.Fprintf(out, "Update with the current ETag writes as Upsert does, conditional on that version: %s\n", cost(meter.Snapshot().Sub(before)))

	before = meter.Snapshot()
	existed, err := l.DeleteIfExists(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "DeleteIfExists removed the entity first, then its blobs (existed: %t): %s\n", existed, cost(meter.Snapshot().Sub(before)))
	return nil
}

// cost states what a step cost in storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s %s=%d", c.Service, c.Operation, c.Requests))
	}
	return fmt.Sprintf("%d transaction%s (%s)", s.Total(), map[bool]string{true: "s"}[s.Total() != 1], strings.Join(ops, ", "))
}
