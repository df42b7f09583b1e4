package sections

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/patterns"
)

// LargeEntities shows the large entities pattern: property values too
// large for a table live in blobs, and the entity keeps references.
func LargeEntities() demo.Section {
	return demo.Section{
		Name:        "largeentities",
		Description: "large entities: a 2 MiB photo and a 100,000-character biography in blobs, crash-safe updates, sweep",
		Run:         runLargeEntities,
	}
}

// leEmployee has two fields too large for a table.
type leEmployee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	Name       string      `table:"Name"`
	Bio        string      `table:"Bio"`
	Photo      []byte      `table:"Photo,omitempty"`
	ETag       azcore.ETag `table:",etag"`
}

func runLargeEntities(ctx context.Context, env *demo.Env) error {
	tbl, err := patTable[leEmployee](ctx, env, "LargeEntities")
	if err != nil {
		return err
	}
	cname := env.ContainerName("large-entities")
	if err := tablekit.ValidateContainerName(cname); err != nil {
		return err
	}
	cont := env.Account.Container(cname)
	if _, err := cont.Create(ctx, nil); err != nil {
		return tablekit.WrapError("CreateContainer", err)
	}
	env.Defer(func(ctx context.Context) error {
		_, err := cont.Delete(ctx, nil)
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return nil
		}
		return tablekit.WrapError("DeleteContainer", err)
	})
	l, err := patterns.NewLarge(tbl, cont, nil)
	if err != nil {
		return err
	}
	meter := env.Account.Meter()
	env.Say("a property holds at most 64 KiB and an entity 1 MiB; Large moves bigger values to blobs in container %s", l.ContainerName())

	photo := make([]byte, 2<<20)
	_, _ = rand.Read(photo)
	emp := leEmployee{Department: "Sales", ID: "000223", Name: "Ada", Bio: strings.Repeat("Ada wrote the first program. ", 3449)[:100000], Photo: photo}
	before := meter.Snapshot()
	etag, err := l.Upsert(ctx, emp)
	if err != nil {
		return err
	}
	env.Say("Upsert wrote the blobs first, then the entity: %v", meter.Snapshot().Sub(before))
	refs, err := l.Refs(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	for _, name := range []string{"Bio", "Photo"} {
		env.Say("  %s -> blob %s (%d bytes)", name, refs[name].Blob, refs[name].Size)
	}

	before = meter.Snapshot()
	got, err := l.Get(ctx, "Sales", "000223", nil)
	if err != nil {
		return err
	}
	if got.Bio != emp.Bio || !bytes.Equal(got.Photo, emp.Photo) || got.ETag != etag {
		return errors.New("the large values (or the ETag Upsert returned) did not round-trip")
	}
	env.Say("Get read the entity and both blobs, concurrently: %v", meter.Snapshot().Sub(before))
	before = meter.Snapshot()
	light, err := l.Get(ctx, "Sales", "000223", &patterns.LargeGetOptions{SkipBlobs: true})
	if err != nil {
		return err
	}
	env.Say("Get with SkipBlobs reads only the entity (Name %q, Bio %d chars): %v", light.Name, len(light.Bio), meter.Snapshot().Sub(before))

	emp.Photo = photo[:1<<20]
	before = meter.Snapshot()
	if _, err := l.Upsert(ctx, emp); err != nil {
		return err
	}
	env.Say("replacing it writes new blobs under new names, then the entity, then deletes the old blobs: %v", meter.Snapshot().Sub(before))
	env.Say("so a crash leaves at worst a blob nobody references, never a reference to a missing blob")

	// Simulate a writer that died after writing its blob.
	orphan := cont.NewBlockBlobClient(tbl.Name() + "/crashed-put/Photo")
	if _, err := orphan.Upload(ctx, streaming.NopCloser(bytes.NewReader(photo[:1000])), nil); err != nil {
		return tablekit.WrapError("PutBlob", err)
	}
	res, err := l.Sweep(ctx, nil)
	if err != nil {
		return err
	}
	env.Say("a blob left by a crashed Upsert: Sweep with the default 1-hour grace keeps it (%d blobs, %d referenced, %d deleted), since an Upsert may be in flight", res.Blobs, res.Referenced, res.Deleted)
	res, err = l.Sweep(ctx, &patterns.SweepOptions{MinAge: -1})
	if err != nil {
		return err
	}
	if res.Deleted != 1 {
		return fmt.Errorf("sweep deleted %d blobs, want 1", res.Deleted)
	}
	env.Say("Sweep without grace deleted the orphan %s", res.Orphans[0])

	before = meter.Snapshot()
	if _, err := l.DeleteIfExists(ctx, "Sales", "000223"); err != nil {
		return err
	}
	env.Say("DeleteIfExists removed the entity first, then its blobs: %v", meter.Snapshot().Sub(before))
	return nil
}
