package patterns_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// staleETag is an ETag no entity of these tests has.
const staleETag = azcore.ETag(`W/"datetime'2001-01-01T00%3A00%3A00.0000000Z'"`)

// checkOnlyReferenced fails the test unless the container holds exactly the
// blobs the entities pk/rks reference: no orphan, no missing blob.
func checkOnlyReferenced[T any](t *testing.T, l *patterns.Large[T], cont *container.Client, pk string, rks ...string) {
	t.Helper()
	ctx := testContext(t)
	var want []string
	for _, rk := range rks {
		refs, err := l.Refs(ctx, pk, rk)
		if err != nil {
			t.Fatalf("Refs %s: %v", rk, err)
		}
		for _, r := range refs {
			want = append(want, r.Blob)
		}
	}
	got := listBlobs(t, ctx, cont)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the container holds %v; the entities reference %v", got, want)
	}
}

// TestLargeConditionalVerbs: Insert, Update, Modify and Delete with ETags
// keep Table's meanings (ErrAlreadyExists, ErrPreconditionFailed,
// ErrNotFound, an empty ETag refused), write no blob when the version
// check fails, and leave exactly the blobs the stored entities reference.
func TestLargeConditionalVerbs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(typed[largeDoc](t, tbl), cont, &patterns.LargeOptions{Threshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	const pk = "p"
	cost := func(f func()) tablekit.MeterSnapshot {
		before := acct.Meter().Snapshot()
		f()
		return acct.Meter().Snapshot().Sub(before)
	}
	get := func(rk string) largeDoc {
		t.Helper()
		d, err := l.Get(ctx, pk, rk)
		if err != nil {
			t.Fatalf("Get %s: %v", rk, err)
		}
		return d
	}

	// Insert: blobs, then the entity; nothing read before.
	v1 := newLargeDoc(pk, "a", "v1", 3000, 3000)
	var etag1 azcore.ETag
	c := cost(func() { etag1, err = l.Insert(ctx, v1) })
	if err != nil {
		t.Fatal(err)
	}
	if c.Count("blob", "PutBlob") != 2 || c.Count("table", "InsertEntity") != 1 || c.Service("table") != 1 {
		t.Fatalf("Insert cost %v; want two blob writes and one insert", c)
	}
	if got := get("a"); !equalLargeDoc(got, v1) || got.ETag != etag1 {
		t.Fatalf("after Insert: %s etag %s; want %s etag %s", largeDocString(got), got.ETag, largeDocString(v1), etag1)
	}
	if _, err := l.Insert(ctx, newLargeDoc(pk, "a", "v1b", 3000, 3000)); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Fatalf("a second Insert: %v; want ErrAlreadyExists", err)
	}
	checkOnlyReferenced(t, l, cont, pk, "a") // the refused Insert's blobs are gone

	// Update: a stale ETag fails before any blob is written.
	c = cost(func() { _, err = l.Update(ctx, newLargeDoc(pk, "a", "stale", 3000, 3000), staleETag) })
	if !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag: %v; want ErrPreconditionFailed", err)
	}
	if c.Service("blob") != 0 || c.Total() != 1 {
		t.Fatalf("a refused Update cost %v; want one point query and no blob", c)
	}
	v2 := newLargeDoc(pk, "a", "v2", 2500, 500) // Data moves back into the entity
	etag2, err := l.Update(ctx, v2, etag1)
	if err != nil {
		t.Fatalf("Update with the ETag read: %v", err)
	}
	if got := get("a"); !equalLargeDoc(got, v2) || got.ETag != etag2 || etag2 == etag1 {
		t.Fatalf("after Update: %s etag %s (returned %s)", largeDocString(got), got.ETag, etag2)
	}
	checkOnlyReferenced(t, l, cont, pk, "a") // v1's blobs are gone
	if _, err := l.Update(ctx, newLargeDoc(pk, "a", "late", 3000, 3000), etag1); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("Update with the replaced ETag: %v; want ErrPreconditionFailed", err)
	}
	c = cost(func() { _, err = l.Update(ctx, newLargeDoc(pk, "none", "x", 3000, 3000), azcore.ETagAny) })
	if !errors.Is(err, tablekit.ErrNotFound) || c.Service("blob") != 0 {
		t.Fatalf("Update(ETagAny) of a missing entity: %v, cost %v; want ErrNotFound and no blob", err, c)
	}
	v3 := newLargeDoc(pk, "a", "v3", 4000, 4000)
	etag3, err := l.Update(ctx, v3, azcore.ETagAny)
	if err != nil || get("a").Ver != "v3" || get("a").ETag != etag3 {
		t.Fatalf("Update(ETagAny): %v", err)
	}
	c = cost(func() { _, err = l.Update(ctx, v3, "") })
	if !errors.Is(err, tablekit.ErrInvalidInput) || c.Total() != 0 {
		t.Fatalf("Update with no ETag: %v, cost %v; want ErrInvalidInput before sending", err, c)
	}
	var ve *tablekit.ValidationError
	if !errors.As(err, &ve) || ve.Op != "patterns.Large.Update" {
		t.Fatalf("Update with no ETag: %#v; want a *ValidationError of Large.Update", err)
	}
	checkOnlyReferenced(t, l, cont, pk, "a")

	// Modify: read (with the blobs), change, write conditional on it.
	got, err := l.Modify(ctx, pk, "a", func(d *largeDoc) error {
		if d.Ver != "v3" || d.ETag != etag3 || len(d.Body) != 4000 {
			return fmt.Errorf("fn saw %s etag %s", largeDocString(*d), d.ETag)
		}
		*d = newLargeDoc(pk, "a", "m1", 1500, 2000)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stored := get("a"); !equalLargeDoc(stored, got) || stored.ETag != got.ETag || got.Ver != "m1" {
		t.Fatalf("Modify returned %s etag %s; stored %s etag %s", largeDocString(got), got.ETag, largeDocString(stored), stored.ETag)
	}
	created, err := l.Modify(ctx, pk, "b", func(d *largeDoc) error {
		if d.PK != pk || d.RK != "b" || d.Ver != "" || d.ETag != "" {
			return fmt.Errorf("fn saw %+v for a missing entity; want a zero value with the keys", *d)
		}
		*d = newLargeDoc(pk, "b", "b1", 2000, 100)
		return nil
	})
	if err != nil || get("b").Ver != "b1" || created.ETag != get("b").ETag {
		t.Fatalf("Modify of a missing entity: %v", err)
	}
	errFn := errors.New("no change")
	c = cost(func() { _, err = l.Modify(ctx, pk, "a", func(*largeDoc) error { return errFn }) })
	if err != errFn || c.Service("blob") != 2 || c.Service("table") != 1 { // the read: the entity and m1's two blobs
		t.Fatalf("Modify whose fn fails: %v, cost %v; want fn's error as it is and only the read", err, c)
	}
	_, err = l.Modify(ctx, pk, "a", func(d *largeDoc) error { d.RK = "other"; return nil })
	if !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Fatalf("Modify changing the keys: %v; want ErrInvalidKey", err)
	}
	checkOnlyReferenced(t, l, cont, pk, "a", "b")

	// Delete: a stale ETag deletes nothing; the current one deletes the
	// entity and its blobs.
	if err := l.Delete(ctx, pk, "a", staleETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("Delete with a stale ETag: %v; want ErrPreconditionFailed", err)
	}
	if err := l.Delete(ctx, pk, "a", get("a").ETag); err != nil {
		t.Fatalf("Delete with the ETag read: %v", err)
	}
	if _, err := l.Get(ctx, pk, "a"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := l.Delete(ctx, pk, "a", azcore.ETagAny); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Delete(ETagAny) of a missing entity: %v; want ErrNotFound", err)
	}
	c = cost(func() { err = l.Delete(ctx, pk, "b", "") })
	if !errors.Is(err, tablekit.ErrInvalidInput) || c.Total() != 0 {
		t.Fatalf("Delete with no ETag: %v, cost %v; want ErrInvalidInput before sending", err, c)
	}
	if err := l.Delete(ctx, pk, "b", azcore.ETagAny); err != nil {
		t.Fatalf("Delete(ETagAny): %v", err)
	}
	checkOnlyReferenced(t, l, cont, pk)
}

// counterDoc is a large entity with a counter: the Body always goes to a
// blob and names the write that stored it.
type counterDoc struct {
	PK    string      `table:",pk"`
	RK    string      `table:",rk"`
	ETag  azcore.ETag `table:",etag"`
	Count int         `table:"Count"`
	By    string      `table:"By"`
	Body  string      `table:"Body"`
}

// TestLargeModifyConcurrent: writers with their own Accounts and Larges (as
// separate processes would have) increment one large entity's counter with
// Modify. No increment is lost, the body stored is the one the last
// increment wrote, and no blob is left behind: each write that lost a race
// deleted its own blobs, each that won deleted the replaced version's.
func TestLargeModifyConcurrent(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	setup := testenv.Account(t, nil)
	tbl := namedTable(t, setup)
	cont := testenv.NewContainer(t, setup)
	const writers, increments = 8, 6
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		acct := testenv.Account(t, nil)
		mine, err := tablekit.OpenTable[counterDoc](acct, tbl.Name(), nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := patterns.NewLarge(mine, acct.Blobs().ServiceClient().NewContainerClient(containerName(cont.URL())), &patterns.LargeOptions{Threshold: 1024})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range increments {
				by := fmt.Sprintf("w%d.%d", w, i)
				_, err := l.Modify(ctx, "p", "counter", func(d *counterDoc) error {
					d.Count++
					d.By = by
					d.Body = strings.Repeat(by+";", 400)
					return nil
				})
				if err != nil {
					errs[w] = fmt.Errorf("writer %d, increment %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	l, err := patterns.NewLarge(typed[counterDoc](t, tbl), cont, &patterns.LargeOptions{Threshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctx, "p", "counter")
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != writers*increments {
		t.Fatalf("Count %d after %d acknowledged increments", got.Count, writers*increments)
	}
	if got.Body != strings.Repeat(got.By+";", 400) {
		t.Fatalf("the stored body was not written with By %s", got.By)
	}
	checkOnlyReferenced(t, l, cont, "p", "counter")
}

// TestLargeUpdateAnswerLost: an Update (and a Modify) whose entity write is
// applied with its answer lost meets its own effect when the SDK retries
// (a new ETag: tablekit says ErrOutcomeUnknown). The entity references the
// write's own new blobs, so the write succeeded: Update reports success,
// keeps its blobs and deletes the replaced version's.
func TestLargeUpdateAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	tables := chaos.EndpointsOf(testenv.Account(t, nil)).Table
	acct, arm := lossAccount(t, func(r *http.Request) bool {
		return strings.HasPrefix(r.URL.String(), tables) && r.Method == http.MethodPut // an If-Match replace
	})
	tbl := namedTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(typed[largeDoc](t, tbl), cont, &patterns.LargeOptions{Threshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	etag, err := l.Insert(ctx, newLargeDoc("p", "d", "v1", 3000, 3000))
	if err != nil {
		t.Fatal(err)
	}
	p := arm()
	v2 := newLargeDoc("p", "d", "v2", 3000, 3000)
	etag2, err := l.Update(ctx, v2, etag)
	if err != nil || !p.done.Load() {
		t.Fatalf("Update with its answer lost: %v (answer lost: %v)", err, p.done.Load())
	}
	got, err := l.Get(ctx, "p", "d")
	if err != nil || !equalLargeDoc(got, v2) || got.ETag != etag2 {
		t.Fatalf("after Update: %s etag %s (returned %s), %v", largeDocString(got), got.ETag, etag2, err)
	}
	checkOnlyReferenced(t, l, cont, "p", "d")

	p = arm()
	got, err = l.Modify(ctx, "p", "d", func(d *largeDoc) error { *d = newLargeDoc("p", "d", "v3", 2000, 2000); return nil })
	if err != nil || !p.done.Load() || got.Ver != "v3" {
		t.Fatalf("Modify with its answer lost: %v (answer lost: %v)", err, p.done.Load())
	}
	checkOnlyReferenced(t, l, cont, "p", "d")
}
