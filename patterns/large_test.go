package patterns_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// Doc is a typed entity with large fields.
type Doc struct {
	Folder string `table:",pk"`
	Name   string `table:",rk"`
	Title  string `table:"Title"`
	Body   string `table:"Body"`
	Scan   []byte `table:"Scan,omitempty"`
	Pages  int    `table:"Pages"`
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// longText is a string of n characters, some outside ASCII.
func longText(n int) string {
	var b strings.Builder
	alphabet := []rune("abcdefghijklmnopqrstuvwxyzé€😀 ")
	for i := range n {
		b.WriteRune(alphabet[(i*7+i/13)%len(alphabet)])
	}
	return b.String()
}

// listBlobs returns the names of the blobs in a container.
func listBlobs(t *testing.T, ctx context.Context, c *container.Client) []string {
	t.Helper()
	var names []string
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	return names
}

func TestLargeRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(typed[Doc](t, tbl), cont, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := Doc{Folder: "f", Name: "report", Title: "Q3", Body: longText(200000), Scan: randomBytes(5 << 20), Pages: 12}
	before := acct.Meter().Snapshot()
	if _, err := l.Upsert(ctx, doc); err != nil {
		t.Fatal(err)
	}
	cost := acct.Meter().Snapshot().Sub(before)
	if cost.Count("blob", "PutBlob") != 2 || cost.Count("table", "InsertEntity") != 1 || cost.Service("table") != 2 {
		t.Fatalf("Upsert cost %v; want 2 blobs, a read of the references and one insert", cost)
	}
	if blobs := listBlobs(t, ctx, cont); len(blobs) != 2 {
		t.Fatalf("blobs %v", blobs)
	}
	got, err := l.Get(ctx, "f", "report")
	if err != nil {
		t.Fatal(err)
	}
	if got.Body != doc.Body || !bytes.Equal(got.Scan, doc.Scan) || got.Title != "Q3" || got.Pages != 12 {
		t.Fatalf("round trip differs: title %q pages %d body %d chars scan %d bytes", got.Title, got.Pages, len(got.Body), len(got.Scan))
	}

	// Reading without the blobs.
	before = acct.Meter().Snapshot()
	light, err := tablekit.Collect(l.Query(ctx, tablekit.PointQuery("f", "report"), &tablekit.QueryOptions{Select: []string{"Title"}}), 0)
	if err != nil || len(light) != 1 {
		t.Fatal(light, err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Service("blob") != 0 || cost.Total() != 1 {
		t.Fatalf("a projected read cost %v", cost)
	}
	if light[0].Body != "" || light[0].Scan != nil || light[0].Title != "Q3" {
		t.Fatalf("a projected read read %+v", light[0].Title)
	}
	// A projection of a property in a blob reads that blob only.
	before = acct.Meter().Snapshot()
	scan, err := tablekit.Collect(l.Query(ctx, tablekit.PointQuery("f", "report"), &tablekit.QueryOptions{Select: []string{"Scan"}}), 0)
	if err != nil || len(scan) != 1 || !bytes.Equal(scan[0].Scan, doc.Scan) || scan[0].Body != "" || scan[0].Title != "" {
		t.Fatal(scan, err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Service("blob") != 1 || cost.Total() != 2 {
		t.Fatalf("a projection of one blob property cost %v", cost)
	}

	// A small body moves back into the entity; the old blobs go.
	doc.Body = "short now"
	if _, err := l.Upsert(ctx, doc); err != nil {
		t.Fatal(err)
	}
	refs, err := l.Refs(ctx, "f", "report")
	if err != nil || len(refs) != 1 || !refs["Scan"].Binary {
		t.Fatalf("refs %v, %v", refs, err)
	}
	if blobs := listBlobs(t, ctx, cont); len(blobs) != 1 || blobs[0] != refs["Scan"].Blob {
		t.Fatalf("blobs %v, want only %s", blobs, refs["Scan"].Blob)
	}
	got, err = l.Get(ctx, "f", "report")
	if err != nil || got.Body != "short now" || !bytes.Equal(got.Scan, doc.Scan) {
		t.Fatalf("after update: %v", err)
	}

	// Query restores blobs too.
	n := 0
	for d, err := range l.Query(ctx, tablekit.PartitionEq("f"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.Scan, doc.Scan) {
			t.Fatal("Query did not restore Scan")
		}
		n++
	}
	if n != 1 {
		t.Fatalf("Query returned %d", n)
	}

	// Delete removes the entity and its blobs.
	if ok, err := l.DeleteIfExists(ctx, "f", "report"); err != nil || !ok {
		t.Fatalf("Delete: %v %v", ok, err)
	}
	if blobs := listBlobs(t, ctx, cont); len(blobs) != 0 {
		t.Fatalf("blobs left: %v", blobs)
	}
	if _, err := l.Get(ctx, "f", "report"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}

func TestLargeEntityBag(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge[tablekit.Entity](tbl, cont, &patterns.LargeOptions{Threshold: 1000})
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]any{"Small": "x", "Medium": strings.Repeat("m", 600), "Big": randomBytes(5000), "N": int64(3)}
	for i := range 20 {
		props["S"+string(rune('A'+i))] = strings.Repeat(string(rune('a'+i)), 500)
	}
	if _, err := l.Upsert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: props}); err != nil {
		t.Fatal(err)
	}
	refs, err := l.Refs(ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	// Threshold 1000 bytes: the 600-char string (1,200 bytes) and the
	// 5,000-byte binary move; 500-char strings (1,000 bytes) stay.
	if len(refs) != 2 || refs["Medium"].Binary || !refs["Big"].Binary {
		t.Fatalf("refs %v", refs)
	}
	got, err := l.Get(ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	equalProps(t, got.Properties, props)

	// With the default threshold nothing is over 64 KiB, but 20 strings of
	// 60,000 bytes make an entity over 1 MiB: the largest move until the
	// rest fits.
	l2, err := patterns.NewLarge[tablekit.Entity](tbl, cont, &patterns.LargeOptions{BlobPrefix: "wide/"})
	if err != nil {
		t.Fatal(err)
	}
	props = map[string]any{}
	for i := range 20 {
		props["S"+string(rune('A'+i))] = strings.Repeat(string(rune('a'+i)), 30000-i)
	}
	if _, err := l2.Upsert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "wide", Properties: props}); err != nil {
		t.Fatal(err)
	}
	refs, err = l2.Refs(ctx, "p", "wide")
	if err != nil || len(refs) != 3 || refs["SA"].Blob == "" || refs["SB"].Blob == "" || refs["SC"].Blob == "" {
		t.Fatalf("refs %v, %v; want the three largest strings", refs, err)
	}
	got, err = l2.Get(ctx, "p", "wide")
	if err != nil {
		t.Fatal(err)
	}
	equalProps(t, got.Properties, props)
}

// crashTableWrites fails every write to one table while armed, as if the
// process died just before it.
type crashTableWrites struct {
	endpoint string
	armed    atomic.Bool
	hits     atomic.Int32
}

func (c *crashTableWrites) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	if c.armed.Load() && r.Method != http.MethodGet && strings.HasPrefix(r.URL.String(), c.endpoint) {
		c.hits.Add(1)
		return nil, errors.New("injected crash before the entity write")
	}
	return req.Next()
}

func TestLargeCrashBetweenBlobAndEntity(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	name := testenv.TableName(t)
	crash := &crashTableWrites{}
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{crash}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	crash.endpoint = chaos.EndpointsOf(acct).Table
	tbl := openEntityTable(t, acct, name)
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tbl.DeleteTable(context.Background()) })
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(typed[Doc](t, tbl), cont, nil)
	if err != nil {
		t.Fatal(err)
	}

	v1 := Doc{Folder: "f", Name: "d", Title: "v1", Scan: randomBytes(200 << 10)}
	if _, err := l.Upsert(ctx, v1); err != nil {
		t.Fatal(err)
	}
	oldRefs, err := l.Refs(ctx, "f", "d")
	if err != nil {
		t.Fatal(err)
	}
	oldBlob := oldRefs["Scan"].Blob

	crash.armed.Store(true)
	v2 := Doc{Folder: "f", Name: "d", Title: "v2", Scan: randomBytes(300 << 10)}
	if _, err := l.Upsert(ctx, v2); err == nil || !strings.Contains(err.Error(), "injected crash") {
		t.Fatalf("Upsert during the crash: %v", err)
	}
	crash.armed.Store(false)
	if crash.hits.Load() != 1 {
		t.Fatalf("%d table writes failed, want 1", crash.hits.Load())
	}

	// The entity still references the old blob, which exists.
	refs, err := l.Refs(ctx, "f", "d")
	if err != nil || refs["Scan"].Blob != oldBlob {
		t.Fatalf("after the crash the entity references %v (%v), want %s", refs, err, oldBlob)
	}
	got, err := l.Get(ctx, "f", "d")
	if err != nil || got.Title != "v1" || !bytes.Equal(got.Scan, v1.Scan) {
		t.Fatalf("after the crash: %q, %v", got.Title, err)
	}
	blobs := listBlobs(t, ctx, cont)
	if len(blobs) != 2 {
		t.Fatalf("blobs after the crash: %v, want the old one and an orphan", blobs)
	}

	// A sweep that protects recent blobs removes nothing; one without
	// protection removes exactly the orphan.
	res, err := l.Sweep(ctx, nil)
	if err != nil || len(res) != 0 || len(listBlobs(t, ctx, cont)) != 2 {
		t.Fatalf("default sweep: %+v, %v", res, err)
	}
	res, err = l.Sweep(ctx, &patterns.SweepOptions{MinAge: -1, DryRun: true})
	if err != nil || len(res) != 1 || res[0] == oldBlob || len(listBlobs(t, ctx, cont)) != 2 {
		t.Fatalf("dry run: %+v, %v", res, err)
	}
	res, err = l.Sweep(ctx, &patterns.SweepOptions{MinAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0] == oldBlob {
		t.Fatalf("sweep: %+v", res)
	}
	if blobs := listBlobs(t, ctx, cont); len(blobs) != 1 || blobs[0] != oldBlob {
		t.Fatalf("blobs after the sweep: %v", blobs)
	}
	if got, err := l.Get(ctx, "f", "d"); err != nil || !bytes.Equal(got.Scan, v1.Scan) {
		t.Fatalf("after the sweep: %v", err)
	}

	// Deleting the entity removes its blob.
	if ok, err := l.DeleteIfExists(ctx, "f", "d"); err != nil || !ok {
		t.Fatalf("Delete: %v %v", ok, err)
	}
	if blobs := listBlobs(t, ctx, cont); len(blobs) != 0 {
		t.Fatalf("blobs after Delete: %v", blobs)
	}
}
