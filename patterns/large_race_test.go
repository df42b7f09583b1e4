package patterns_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// largeRace is two users of one table and container, as two processes
// would be: A's requests pass through a gate, B's do not.
type largeRace struct {
	g    *gate
	a, b *patterns.Large[Doc]
}

func newLargeRace(t *testing.T, after bool, match func(blobs string, r *http.Request) bool, optsA, optsB *patterns.LargeOptions) *largeRace {
	t.Helper()
	acctB := testenv.Account(t, nil)
	blobs := chaos.EndpointsOf(acctB).Blob
	g := newGate(after, func(r *http.Request) bool { return match(blobs, r) })
	tblB := namedTable(t, acctB)
	contB := testenv.NewContainer(t, acctB)
	acctA := gatedAccount(t, g)
	tblA := openEntityTable(t, acctA, tblB.Name())
	contA := acctA.Blobs().ServiceClient().NewContainerClient(containerName(contB.URL()))
	a, err := patterns.NewLarge(typed[Doc](t, tblA), contA, optsA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := patterns.NewLarge(typed[Doc](t, tblB), contB, optsB)
	if err != nil {
		t.Fatal(err)
	}
	return &largeRace{g: g, a: a, b: b}
}

// containerName is the last segment of a container URL.
func containerName(url string) string {
	return url[strings.LastIndex(strings.TrimSuffix(url, "/"), "/")+1:]
}

// isBlobRead matches the download of a blob (not a listing).
func isBlobRead(blobs string, r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.String(), blobs) && !r.URL.Query().Has("comp")
}

// isBlobUpload matches the upload of a whole blob (Put Blob): the PUT with
// an x-ms-blob-type header.
func isBlobUpload(blobs string, r *http.Request) bool {
	return r.Method == http.MethodPut && strings.HasPrefix(r.URL.String(), blobs) && hasHeader(r.Header, "x-ms-blob-type")
}

// hasHeader reports whether h holds the header name, however its key is
// spelled: azblob sets x-ms-blob-type under that lower-case key, which
// Header.Get (looking up X-Ms-Blob-Type) does not find.
func hasHeader(h http.Header, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func doc(name, title string, n int) Doc {
	return Doc{Folder: "f", Name: name, Title: title, Scan: bytes.Repeat([]byte(title), n)}
}

// TestLargeReadRacingUpsert: a Get or Query holding an entity whose blob a
// concurrent Upsert replaces (and deletes) must return the entity, old or
// new, never "not found".
func TestLargeReadRacingUpsert(t *testing.T) {
	t.Parallel()
	t.Run("Get", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		r := newLargeRace(t, false, isBlobRead, nil, nil)
		v1, v2 := doc("d", "v1", 100000), doc("d", "v2", 100000)
		if _, err := r.b.Upsert(ctx, v1); err != nil {
			t.Fatal(err)
		}
		r.g.arm()
		var got Doc
		done := run(func() (err error) { got, err = r.a.Get(ctx, "f", "d"); return err })
		r.g.wait(t) // A read the entity and is about to read v1's blob
		if _, err := r.b.Upsert(ctx, v2); err != nil {
			t.Fatal(err)
		}
		r.g.open()
		if err := <-done; err != nil {
			t.Fatalf("Get while the entity was replaced: %v (matches ErrNotFound: %v)", err, errors.Is(err, tablekit.ErrNotFound))
		}
		if !(got.Title == "v1" && bytes.Equal(got.Scan, v1.Scan) || got.Title == "v2" && bytes.Equal(got.Scan, v2.Scan)) {
			t.Fatalf("Get returned %q with %d bytes: neither version", got.Title, len(got.Scan))
		}
	})
	t.Run("Query", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		r := newLargeRace(t, false, isBlobRead, nil, nil)
		for _, d := range []Doc{doc("d1", "one", 100000), doc("d2", "two", 100000)} {
			if _, err := r.b.Upsert(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		r.g.arm()
		var titles []string
		done := run(func() error {
			for d, err := range r.a.Query(ctx, tablekit.PartitionEq("f"), nil) {
				if err != nil {
					return err
				}
				titles = append(titles, d.Name+"="+d.Title)
			}
			return nil
		})
		r.g.wait(t) // A is about to read d1's blob
		if _, err := r.b.Upsert(ctx, doc("d1", "one-v2", 100000)); err != nil {
			t.Fatal(err)
		}
		r.g.open()
		if err := <-done; err != nil {
			t.Fatalf("Query while an entity was replaced: %v (matches ErrNotFound: %v)", err, errors.Is(err, tablekit.ErrNotFound))
		}
		if len(titles) != 2 || titles[1] != "d2=two" || titles[0] != "d1=one" && titles[0] != "d1=one-v2" {
			t.Fatalf("Query returned %v, want d1 (either version) and d2", titles)
		}
	})
}

// TestLargeSweepRacingUpsert: an Upsert that stalls between writing its blob and
// writing its entity longer than the sweep's grace period must not store
// a reference to the blob the sweep removed meanwhile.
func TestLargeSweepRacingUpsert(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := newLargeRace(t, true, isBlobUpload, &patterns.LargeOptions{Grace: time.Second}, nil)
	r.g.arm()
	done := run(func() error { _, err := r.a.Upsert(ctx, doc("d", "v1", 100000)); return err })
	r.g.wait(t) // the blob is written; A has not heard yet
	time.Sleep(1500 * time.Millisecond)
	res, err := r.b.Sweep(ctx, &patterns.SweepOptions{MinAge: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sweep during the Upsert: %+v", res)
	r.g.open()
	errPut := <-done
	t.Logf("Upsert: %v", errPut)
	got, err := r.b.Get(ctx, "f", "d")
	switch {
	case errors.Is(err, tablekit.ErrNotFound) && errPut != nil:
		// the Upsert gave up: nothing stored
	case err != nil:
		t.Fatalf("after the Upsert (%v), the entity cannot be read: %v", errPut, err)
	case errPut != nil || got.Title != "v1":
		t.Fatalf("Upsert said %v, Get read %q", errPut, got.Title)
	}
}

// TestLargeSweepGrace: Sweep keeps unreferenced blobs younger than the
// grace period, by the Large's Clock, and once they are older removes
// exactly those, never a referenced one.
func TestLargeSweepGrace(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := namedTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(typed[Doc](t, tbl), cont, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Upsert(ctx, doc("d", "v1", 100000)); err != nil {
		t.Fatal(err)
	}
	refs, err := l.Refs(ctx, "f", "d")
	if err != nil {
		t.Fatal(err)
	}
	orphan := tbl.Name() + "/left-by-a-crash/Scan"
	if _, err := cont.NewBlockBlobClient(orphan).UploadBuffer(ctx, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	res, err := l.Sweep(ctx, nil)
	if err != nil || len(res) != 0 || len(listBlobs(t, ctx, cont)) != 2 {
		t.Fatalf("sweep within the grace period: %+v, %v", res, err)
	}
	later := time.Now().Add(patterns.DefaultLargeGrace + time.Minute)
	sweeper, err := patterns.NewLarge(typed[Doc](t, tbl), cont, &patterns.LargeOptions{Clock: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	res, err = sweeper.Sweep(ctx, nil)
	if err != nil || len(res) != 1 || res[0] != orphan {
		t.Fatalf("sweep after the grace period: %+v, %v", res, err)
	}
	if blobs := listBlobs(t, ctx, cont); len(blobs) != 1 || blobs[0] != refs["Scan"].Blob {
		t.Fatalf("blobs after the sweep: %v, want only %s", blobs, refs["Scan"].Blob)
	}
}

// TestLargeMissingBlob: a blob removed behind Large's back (the entity did
// not change) is reported as ErrMissingBlob, not as a missing entity.
func TestLargeMissingBlob(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := namedTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(typed[Doc](t, tbl), cont, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Upsert(ctx, doc("d", "v1", 100000)); err != nil {
		t.Fatal(err)
	}
	refs, err := l.Refs(ctx, "f", "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cont.NewBlobClient(refs["Scan"].Blob).Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = l.Get(ctx, "f", "d")
	if !errors.Is(err, patterns.ErrMissingBlob) || errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Get with a blob deleted by hand: %v; want ErrMissingBlob and not ErrNotFound", err)
	}
	for _, err := range l.Query(ctx, tablekit.PartitionEq("f"), nil) {
		if !errors.Is(err, patterns.ErrMissingBlob) {
			t.Fatalf("Query with a blob deleted by hand: %v; want ErrMissingBlob", err)
		}
	}
}

// loseAnswer lets the first request matching match reach the service and
// then answers 500 instead of the service's answer, as a lost answer.
type loseAnswer struct {
	match func(*http.Request) bool
	done  atomic.Bool
}

func (p *loseAnswer) Do(req *policy.Request) (*http.Response, error) {
	if !p.match(req.Raw()) || !p.done.CompareAndSwap(false, true) {
		return req.Next()
	}
	resp, err := req.Next()
	if err != nil {
		return resp, err
	}
	resp.Body.Close()
	return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Operation Timed Out",
		Header: http.Header{"X-Ms-Error-Code": {"OperationTimedOut"}}, Body: http.NoBody, Request: req.Raw()}, nil
}

// TestLargeUploadAnswerLost: a blob upload whose answer was lost is
// retried by the SDK and finds its own blob (409): Upsert succeeds.
func TestLargeUploadAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	blobs := chaos.EndpointsOf(testenv.Account(t, nil)).Blob
	lose := &loseAnswer{match: func(r *http.Request) bool { return isBlobUpload(blobs, r) }}
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{lose}, Retry: policy.RetryOptions{RetryDelay: 10 * time.Millisecond}}})
	tbl := namedTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(typed[Doc](t, tbl), cont, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := doc("d", "v1", 100000)
	if _, err := l.Upsert(ctx, v); err != nil {
		t.Fatalf("Upsert with a lost upload answer: %v", err)
	}
	if !lose.done.Load() {
		t.Fatal("no upload answer was lost")
	}
	got, err := l.Get(ctx, "f", "d")
	if err != nil || !bytes.Equal(got.Scan, v.Scan) {
		t.Fatalf("Get: %v", err)
	}
}

// TestLargeConcurrentUse: writers, readers and sweeps on separate Accounts
// (as separate processes) on three entities. No read reports an entity
// missing or fails, every stored reference resolves, concurrent Upserts leave
// no unreferenced blob, and a final sweep past the grace period leaves
// exactly the referenced blobs.
func TestLargeConcurrentUse(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const writers, puts, readers = 4, 12, 2
	keys := []string{"a", "b", "c"}
	acct := testenv.Account(t, nil)
	tbl := namedTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	open := func(opts *patterns.LargeOptions) *patterns.Large[Doc] {
		a := testenv.Account(t, nil)
		l, err := patterns.NewLarge(typed[Doc](t, openEntityTable(t, a, tbl.Name())), a.Blobs().ServiceClient().NewContainerClient(containerName(cont.URL())), opts)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := open(nil)
	for _, k := range keys {
		if _, err := first.Upsert(ctx, doc(k, "init", 50000)); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	errs := make(chan error, writers+readers+1)
	done := make(chan struct{}, writers)
	for g := range writers {
		l := open(nil)
		go func() {
			for i := range puts {
				title := fmt.Sprintf("w%d-%d", g, i)
				if _, err := l.Upsert(ctx, doc(keys[(g+i)%len(keys)], title, 50000+i)); err != nil {
					errs <- fmt.Errorf("Upsert %s: %w", title, err)
					return
				}
			}
			done <- struct{}{}
		}()
	}
	var reads atomic.Int64
	for g := range readers {
		l := open(nil)
		go func() {
			for i := 0; !stop.Load(); i++ {
				if g == 0 {
					d, err := l.Get(ctx, "f", keys[i%len(keys)])
					if err != nil {
						errs <- fmt.Errorf("Get: %w", err)
						return
					}
					if len(d.Scan) < 50000 || !bytes.HasPrefix(d.Scan, []byte(d.Title)) {
						errs <- fmt.Errorf("Get %s: %q with %d bytes that are not its own", keys[i%len(keys)], d.Title, len(d.Scan))
						return
					}
				} else {
					n := 0
					for _, err := range l.Query(ctx, tablekit.PartitionEq("f"), nil) {
						if err != nil {
							errs <- fmt.Errorf("Query: %w", err)
							return
						}
						n++
					}
					if n != len(keys) {
						errs <- fmt.Errorf("Query returned %d entities, want %d", n, len(keys))
						return
					}
				}
				reads.Add(1)
			}
			errs <- nil
		}()
	}
	go func() { // sweeps with the default grace: they must remove nothing live
		l := open(nil)
		for !stop.Load() {
			if _, err := l.Sweep(ctx, nil); err != nil {
				errs <- fmt.Errorf("Sweep: %w", err)
				return
			}
		}
		errs <- nil
	}()
	for range writers {
		select {
		case <-done:
		case err := <-errs:
			stop.Store(true)
			t.Fatal(err)
		}
	}
	stop.Store(true)
	for range readers + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d reads during %d puts", reads.Load(), writers*puts)

	later := time.Now().Add(patterns.DefaultLargeGrace + time.Minute)
	res, err := open(&patterns.LargeOptions{Clock: func() time.Time { return later }}).Sweep(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 0 {
		t.Errorf("concurrent Upserts left %d unreferenced blobs (each Upsert deletes the blobs of the version it replaced)", len(res))
	}
	live := map[string]bool{}
	for _, k := range keys {
		refs, err := first.Refs(ctx, "f", k)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			live[r.Blob] = true
		}
		if _, err := first.Get(ctx, "f", k); err != nil {
			t.Fatalf("Get %s after the run: %v", k, err)
		}
	}
	blobs := listBlobs(t, ctx, cont)
	if len(blobs) != len(live) {
		t.Fatalf("after the final sweep %d blobs remain, %d referenced: %v", len(blobs), len(live), blobs)
	}
	for _, b := range blobs {
		if !live[b] {
			t.Fatalf("blob %s is left and not referenced", b)
		}
	}
}

// TestLargeUpsertEntityAnswerLost: the entity write's answer is lost after
// the service applied it, and the SDK's retry meets the write's own effect
// (an insert finds the entity, an If-Match update finds a new ETag), which
// tablekit reports as ErrOutcomeUnknown. The entity references the Upsert's
// new blobs, so Upsert must keep them and succeed (the chaos suite found Upsert
// deleting them, leaving a reference to missing blobs), and the replaced
// version's blobs must go.
func TestLargeUpsertEntityAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	tables := chaos.EndpointsOf(testenv.Account(t, nil)).Table
	acct, arm := lossAccount(t, func(r *http.Request) bool {
		return strings.HasPrefix(r.URL.String(), tables) && !strings.Contains(r.URL.Path, "$batch") &&
			!strings.HasPrefix(strings.TrimPrefix(r.URL.Path, "/"), "Tables") &&
			(r.Method == http.MethodPost || r.Method == http.MethodPut)
	})
	tbl := namedTable(t, acct)
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(typed[Doc](t, tbl), cont, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []Doc{doc("d", "v1", 100000), doc("d", "v2", 120000)} { // an insert, then a replace
		p := arm()
		if _, err := l.Upsert(ctx, v); err != nil {
			t.Fatalf("Upsert %s with the entity write's answer lost: %v", v.Title, err)
		}
		if !p.done.Load() {
			t.Fatalf("Upsert %s: no entity write answer was lost", v.Title)
		}
		got, err := l.Get(ctx, "f", "d")
		if err != nil || got.Title != v.Title || !bytes.Equal(got.Scan, v.Scan) {
			t.Fatalf("Get after Upsert %s: %q, %v", v.Title, got.Title, err)
		}
		refs, err := l.Refs(ctx, "f", "d")
		if err != nil {
			t.Fatal(err)
		}
		if blobs := listBlobs(t, ctx, cont); len(blobs) != 1 || blobs[0] != refs["Scan"].Blob {
			t.Fatalf("blobs after Upsert %s: %v, want only the referenced %s", v.Title, blobs, refs["Scan"].Blob)
		}
	}
}

// lossAccount returns an Account whose requests pass through the
// loseAnswer (of requests matching match) that the latest call of arm
// made; until the first arm, none is lost.
func lossAccount(t *testing.T, match func(*http.Request) bool) (*tablekit.Account, func() *loseAnswer) {
	t.Helper()
	var lose atomic.Pointer[loseAnswer]
	arm := func() *loseAnswer {
		p := &loseAnswer{match: match}
		lose.Store(p)
		return p
	}
	arm().done.Store(true)
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(req *policy.Request) (*http.Response, error) { return lose.Load().Do(req) })}, Retry: policy.RetryOptions{RetryDelay: 10 * time.Millisecond}}})
	return acct, arm
}

// policyFunc is a policy.Policy made of a function.
type policyFunc func(req *policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }

// TestLargeInsertRetryAfterDelete: an Upsert that inserts its entity has the
// insert applied and its answer lost; before the retry, another Large
// deletes the entity and its blobs. A retry of the same insert would bring
// the entity back referencing the deleted blobs (the chaos suite found
// readers failing with ErrMissingBlob). Upsert must leave either no entity or
// an entity whose blobs exist, and must not report success for nothing.
func TestLargeInsertRetryAfterDelete(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	plain := testenv.Account(t, nil)
	tables := chaos.EndpointsOf(plain).Table
	tblB := namedTable(t, plain)
	contB := testenv.NewContainer(t, plain)
	b, err := patterns.NewLarge(typed[Doc](t, tblB), contB, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	var deleted atomic.Bool
	var hookErr error
	lose := policyFunc(func(req *policy.Request) (*http.Response, error) {
		r := req.Raw()
		isInsert := r.Method == http.MethodPost && strings.HasPrefix(r.URL.String(), tables) &&
			!strings.Contains(r.URL.Path, "$batch") && !strings.HasPrefix(strings.TrimPrefix(r.URL.Path, "/"), "Tables")
		if !isInsert || !once.CompareAndSwap(false, true) {
			return req.Next()
		}
		resp, err := req.Next() // the insert is applied ...
		if err != nil {
			return resp, err
		}
		resp.Body.Close()
		existed, err := b.DeleteIfExists(r.Context(), "f", "d") // ... deleted with its blobs by another writer ...
		deleted.Store(existed)
		hookErr = err
		// ... and its answer is lost.
		return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Operation Timed Out",
			Header: http.Header{"X-Ms-Error-Code": {"OperationTimedOut"}}, Body: http.NoBody, Request: r}, nil
	})
	acctA := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{lose}, Retry: policy.RetryOptions{RetryDelay: 10 * time.Millisecond}}})
	a, err := patterns.NewLarge(typed[Doc](t, openEntityTable(t, acctA, tblB.Name())), acctA.Blobs().ServiceClient().NewContainerClient(containerName(contB.URL())), nil)
	if err != nil {
		t.Fatal(err)
	}
	v := doc("d", "v1", 100000)
	_, putErr := a.Upsert(ctx, v)
	if hookErr != nil || !deleted.Load() {
		t.Fatalf("the other writer's Delete: existed %v, %v", deleted.Load(), hookErr)
	}
	if putErr != nil && !errors.Is(putErr, tablekit.ErrOutcomeUnknown) {
		t.Fatalf("Upsert: %v; want success or ErrOutcomeUnknown", putErr)
	}
	got, err := b.Get(ctx, "f", "d")
	switch {
	case errors.Is(err, tablekit.ErrNotFound):
		if putErr == nil {
			t.Fatal("Upsert reported success, but no entity is stored")
		}
	case err != nil:
		t.Fatalf("Get after Upsert (Upsert said %v): %v", putErr, err)
	case got.Title != v.Title || !bytes.Equal(got.Scan, v.Scan):
		t.Fatalf("Get after Upsert: %q, not the value written", got.Title)
	}
}
