package tablekit_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf16"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// wireKeys are RowKeys that need escaping in a request URL, and the longest
// keys the service takes (1 KiB in UTF-16; 255 bytes of UTF-8 on Cosmos DB).
var wireKeys = []string{
	"o'k", "''", "100%", "%27", "a b", "a+b", "ümlaut ✓ 😀", "!$&()*+,;=@[]{}~`^|\"<>.-_",
	"", longestRowKey("k"), longestRowKey("😀"),
}

// longestRowKey is the longest RowKey of c repeated that the test account
// takes: 1 KiB in UTF-16 on Table storage, 255 bytes on Cosmos DB.
func longestRowKey(c string) string {
	if testenv.Service() == tablekit.ServiceCosmosDB {
		return strings.Repeat(c, 255/len(c))
	}
	return strings.Repeat(c, 1024/(2*len(utf16.Encode([]rune(c)))))
}

const wirePK = "p'k 100% ✓"

type wireItem struct {
	PK  string `table:",pk"`
	RK  string `table:",rk"`
	N   int    `table:"N,omitempty"`
	Tag string `table:"Tag,omitempty"`
}

// TestTransactionAnyKeyEveryAction sends every action kind on keys holding
// quotes, percent signs, spaces, non-ASCII, nothing, and 1 KiB, and checks
// the stored entities and the ETags each action returned.
func TestTransactionAnyKeyEveryAction(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl, err := tablekit.OpenTable[wireItem](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	var inserts []tablekit.Action[wireItem]
	for i, rk := range wireKeys {
		inserts = append(inserts, tablekit.InsertAction(wireItem{PK: wirePK, RK: rk, N: i, Tag: "v1"}))
	}
	etags, err := tbl.Transaction(ctx, inserts...)
	if err != nil {
		t.Fatalf("insert transaction: %v", err)
	}
	checkETags(t, tbl, wirePK, wireKeys, etags)

	// Every other action kind, conditional on the ETags just returned.
	var acts []tablekit.Action[wireItem]
	for i, rk := range wireKeys {
		v := wireItem{PK: wirePK, RK: rk, N: 100 + i}
		switch i % 5 {
		case 0:
			acts = append(acts, tablekit.MergeAction(v, ""))
		case 1:
			acts = append(acts, tablekit.UpsertAction(v))
		case 2:
			acts = append(acts, tablekit.MergeAction(v, etags[i]))
		case 3:
			acts = append(acts, tablekit.UpdateAction(v, etags[i]))
		case 4:
			acts = append(acts, tablekit.DeleteAction(v, etags[i]))
		}
	}
	etags2, err := tbl.Transaction(ctx, acts...)
	if err != nil {
		t.Fatalf("mixed transaction: %v", err)
	}
	for i, rk := range wireKeys {
		got, err := tbl.Get(ctx, wirePK, rk)
		switch i % 5 {
		case 4:
			if !errors.Is(err, tablekit.ErrNotFound) || etags2[i] != "" {
				t.Errorf("key %q: deleted entity: %v, ETag %q", rk, err, etags2[i])
			}
			continue
		case 0, 2: // merge keeps Tag
			if err != nil || got.N != 100+i || got.Tag != "v1" {
				t.Errorf("key %q: merged entity %+v, %v", rk, got, err)
			}
		default: // replace drops Tag
			if err != nil || got.N != 100+i || got.Tag != "" {
				t.Errorf("key %q: replaced entity %+v, %v", rk, got, err)
			}
		}
		if err == nil {
			if etag := getETag(t, tbl, wirePK, rk); etag != etags2[i] {
				t.Errorf("key %q: transaction returned ETag %q, stored %q", rk, etags2[i], etag)
			}
		}
	}

	// A stale ETag fails the transaction at its index, changing nothing.
	_, err = tbl.Transaction(ctx,
		tablekit.UpsertAction(wireItem{PK: wirePK, RK: "fresh"}),
		tablekit.MergeAction(wireItem{PK: wirePK, RK: wireKeys[2]}, etags[2]))
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || !errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Errorf("stale ETag: %v", err)
	}
	if _, err := tbl.Get(ctx, wirePK, "fresh"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("a failed transaction applied an action: %v", err)
	}

	// An empty PartitionKey, in every single-entity write too.
	if _, err := tbl.Transaction(ctx, tablekit.InsertAction(wireItem{RK: "o'k"}), tablekit.InsertAction(wireItem{})); err != nil {
		t.Fatalf("empty PartitionKey: %v", err)
	}
	etag, err := tbl.Merge(ctx, wireItem{N: 7}, "")
	if err != nil {
		t.Fatalf("upsert of empty keys: %v", err)
	}
	if _, err := tbl.Update(ctx, wireItem{N: 8}, etag); err != nil {
		t.Fatalf("update of empty keys: %v", err)
	}
	if got, err := tbl.Get(ctx, "", ""); err != nil || got.N != 8 {
		t.Fatalf("get of empty keys: %+v, %v", got, err)
	}
	if err := tbl.Delete(ctx, "", "", azcore.ETagAny); err != nil {
		t.Fatalf("delete of empty keys: %v", err)
	}
	if err := tbl.Delete(ctx, "", "", azcore.ETagAny); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("second delete of empty keys: %v", err)
	}
}

func getETag(t *testing.T, tbl *tablekit.Table[wireItem], pk, rk string) azcore.ETag {
	t.Helper()
	e, err := tbl.AsEntities().Get(context.Background(), pk, rk)
	if err != nil {
		t.Fatalf("get %q/%q: %v", pk, rk, err)
	}
	return e.ETag
}

func checkETags(t *testing.T, tbl *tablekit.Table[wireItem], pk string, rks []string, etags []azcore.ETag) {
	t.Helper()
	if len(etags) != len(rks) {
		t.Fatalf("%d ETags for %d actions", len(etags), len(rks))
	}
	for i, rk := range rks {
		if etag := getETag(t, tbl, pk, rk); etag != etags[i] || etag == "" {
			t.Errorf("key %q: transaction returned ETag %q, stored %q", rk, etags[i], etag)
		}
	}
}

// TestSingleEntityAnyKey addresses entities whose keys hold quotes,
// percent signs, plus signs, spaces, any Unicode or nothing at all, and the
// longest keys, with every single-entity operation: each is one request of
// its own REST operation (the URL addresses the entity directly), and
// reads back exactly what was written.
func TestSingleEntityAnyKey(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl, err := tablekit.OpenTable[wireItem](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range []string{wirePK, ""} {
		for i, rk := range wireKeys {
			meter := acct.Meter().Snapshot()
			etag, err := tbl.Insert(ctx, wireItem{PK: pk, RK: rk, N: i, Tag: "v1"})
			if err != nil {
				t.Fatalf("insert %q/%q: %v", pk, rk, err)
			}
			got, err := tbl.Get(ctx, pk, rk)
			if err != nil || got != (wireItem{PK: pk, RK: rk, N: i, Tag: "v1"}) {
				t.Fatalf("get %q/%q: %+v, %v", pk, rk, got, err)
			}
			if etag, err = tbl.Merge(ctx, wireItem{PK: pk, RK: rk, N: i + 1}, etag); err != nil {
				t.Fatalf("merge %q/%q: %v", pk, rk, err)
			}
			if etag, err = tbl.Update(ctx, wireItem{PK: pk, RK: rk, N: i + 2, Tag: "v2"}, etag); err != nil {
				t.Fatalf("replace %q/%q: %v", pk, rk, err)
			}
			if _, err := tbl.Merge(ctx, wireItem{PK: pk, RK: rk, N: i + 3}, ""); err != nil {
				t.Fatalf("upsert %q/%q: %v", pk, rk, err)
			}
			sel, err := tablekit.Collect(tbl.Query(ctx, tablekit.PointQuery(pk, rk), &tablekit.QueryOptions{Select: []string{"Tag"}}), 1)
			if err != nil || len(sel) != 1 || sel[0] != (wireItem{PK: pk, RK: rk, Tag: "v2"}) {
				t.Fatalf("point query %q/%q with Select: %+v, %v", pk, rk, sel, err)
			}
			if _, err := tbl.Update(ctx, wireItem{PK: pk, RK: rk}, etag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
				t.Fatalf("update %q/%q with a stale ETag: %v", pk, rk, err)
			}
			if err := tbl.Delete(ctx, pk, rk, azcore.ETagAny); err != nil {
				t.Fatalf("delete %q/%q: %v", pk, rk, err)
			}
			if _, err := tbl.Get(ctx, pk, rk); !errors.Is(err, tablekit.ErrNotFound) {
				t.Fatalf("get %q/%q after delete: %v", pk, rk, err)
			}
			used := acct.Meter().Snapshot().Sub(meter)
			for op, n := range map[string]int64{"InsertEntity": 1, "GetEntity": 2, "QueryEntities": 1, "MergeEntity": 2, "UpdateEntity": 2, "DeleteEntity": 1} {
				if got := used.Count("table", op); got != n {
					t.Errorf("%q/%q: %d %s requests, want %d (%s)", pk, rk, got, op, n, used)
				}
			}
			if used.Total() != 9 {
				t.Errorf("%q/%q: %s, want 9 requests", pk, rk, used)
			}
		}
	}
}

// TestAdminClientSharesThePipeline: the SDK clients an Account hands out
// for table administration are built with the Account's policies: the
// Meter counts their requests and the caller's policies see them.
func TestAdminClientSharesThePipeline(t *testing.T) {
	ctx := context.Background()
	var seen atomic.Int32
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(req *policy.Request) (*http.Response, error) {
		seen.Add(1)
		return req.Next()
	})}}})
	name := testenv.TableName(t)
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(context.Background()) })
	if _, err := acct.Tables().NewClient(name).GetAccessPolicy(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := acct.Tables().NewListTablesPager(nil).NextPage(ctx); err != nil {
		t.Fatal(err)
	}
	used := acct.Meter().Snapshot().Sub(before)
	if used.Count("table", "CreateTable") != 1 || used.Count("table", "QueryTables") != 1 || used.Total() != 3 {
		t.Errorf("the Meter saw %s, want CreateTable, QueryTables and the access policy read", used)
	}
	if seen.Load() != 3 {
		t.Errorf("the caller's policy saw %d requests, want 3", seen.Load())
	}
}

// TestUnreadableTransactionAnswer: a 202 answer to a transaction that
// cannot be read (not a batch answer, or a body cut short) may hide an
// applied transaction: the error matches ErrOutcomeUnknown, and a
// BulkWriter that sends the chunk again recognises the conflict its
// earlier try caused.
func TestUnreadableTransactionAnswer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		answer func(resp *http.Response) *http.Response
	}{
		{"not a batch answer", func(resp *http.Response) *http.Response {
			resp.Body = io.NopCloser(strings.NewReader("<html>upstream proxy says hello</html>"))
			return resp
		}},
		{"cut short", func(resp *http.Response) *http.Response {
			body, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:len(body)/2]), iotest.ErrReader(io.ErrUnexpectedEOF)))
			return resp
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spoil atomic.Int32
			acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(req *policy.Request) (*http.Response, error) {
				resp, err := req.Next()
				if err == nil && isBatch(req.Raw()) && resp.StatusCode == http.StatusAccepted && spoil.Add(-1) >= 0 {
					resp = tc.answer(resp)
				}
				return resp, err
			})}}})
			tbl, err := tablekit.OpenTable[wireItem](acct, testenv.CreateTable(t, acct), nil)
			if err != nil {
				t.Fatal(err)
			}
			spoil.Store(1)
			_, err = tbl.Transaction(ctx, tablekit.InsertAction(wireItem{PK: "p", RK: "1", N: 1}), tablekit.InsertAction(wireItem{PK: "p", RK: "2", N: 2}))
			var re *tablekit.RequestError
			if !errors.Is(err, tablekit.ErrOutcomeUnknown) || !errors.As(err, &re) || re.Op != "Transaction" {
				t.Fatalf("got %v, want a RequestError matching ErrOutcomeUnknown", err)
			}
			if got, err := tbl.Get(ctx, "p", "2"); err != nil || got.N != 2 {
				t.Fatalf("the transaction was applied, yet %+v, %v", got, err)
			}

			// A BulkWriter sends the chunk again with the same attempts
			// record: the retry's conflict is not believed.
			spoil.Store(1)
			res, err := tbl.BulkWriter(&tablekit.BulkOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}}).
				Insert(ctx, []wireItem{{PK: "q", RK: "1"}, {PK: "q", RK: "2"}})
			if err == nil || len(res.Failed) != 2 {
				t.Fatalf("bulk insert after an unreadable answer: %+v, %v", res, err)
			}
			for _, f := range res.Failed {
				if !errors.Is(f.Err, tablekit.ErrOutcomeUnknown) || errors.Is(f.Err, tablekit.ErrAlreadyExists) {
					t.Errorf("item %d: %v, want only ErrOutcomeUnknown", f.Index, f.Err)
				}
			}
		})
	}
}

// tableNameOf makes a table on acct and returns its name.
func tableNameOf(t *testing.T, acct *tablekit.Account) string {
	t.Helper()
	name := testenv.TableName(t)
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(context.Background()) })
	return name
}

// answerDropper is a per-retry policy that lets chosen requests reach the
// service and then loses their answers, as a broken connection would.
type answerDropper struct {
	mu     sync.Mutex
	match  func(*http.Request) bool
	drops  int          // answers still to lose
	after  func() error // run after the service applied a dropped request
	before func() error // run before a request whose answer will be dropped is sent
	seen   atomic.Int32 // requests that matched
}

func (d *answerDropper) arm(n int, match func(*http.Request) bool, after func() error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drops, d.match, d.after = n, match, after
	d.seen.Store(0)
}

func (d *answerDropper) Do(req *policy.Request) (*http.Response, error) {
	d.mu.Lock()
	drop := d.match != nil && d.match(req.Raw()) && d.drops != 0
	if drop {
		d.drops--
	}
	after, before := d.after, d.before
	if d.match != nil && d.match(req.Raw()) {
		d.seen.Add(1)
	}
	d.mu.Unlock()
	if drop && before != nil {
		if err := before(); err != nil {
			return nil, err
		}
	}
	resp, err := req.Next()
	if !drop || err != nil {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if after != nil {
		if err := after(); err != nil {
			return nil, err
		}
	}
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

func isBatch(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/$batch") }

func isMethod(m string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == m && !isBatch(r) }
}

// TestLostAnswer: when the answer to an applied write is lost and the SDK's
// retry then conflicts with the write's own effect, tablekit says the
// outcome is unknown (ErrOutcomeUnknown), not the conflict: the stored
// state cannot tell this write from another writer's identical one.
func TestLostAnswer(t *testing.T) {
	ctx := context.Background()
	drop := &answerDropper{}
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{drop}, Retry: policy.RetryOptions{MaxRetries: 3, RetryDelay: 5 * time.Millisecond, MaxRetryDelay: 20 * time.Millisecond}}})
	tbl, err := tablekit.OpenTable[wireItem](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	unknownOnly := func(t *testing.T, what string, err error, conflict error) {
		t.Helper()
		if !errors.Is(err, tablekit.ErrOutcomeUnknown) || errors.Is(err, conflict) {
			t.Fatalf("%s: %v, want an error matching ErrOutcomeUnknown only", what, err)
		}
	}

	t.Run("transaction insert", func(t *testing.T) {
		drop.arm(1, isBatch, nil)
		_, err := tbl.Transaction(ctx,
			tablekit.InsertAction(wireItem{PK: "t", RK: "a", N: 1}),
			tablekit.InsertAction(wireItem{PK: "t", RK: "o'k", N: 2}))
		var te *tablekit.TransactionError
		unknownOnly(t, "transaction", err, tablekit.ErrAlreadyExists)
		if !errors.As(err, &te) || te.Code != "EntityAlreadyExists" {
			t.Errorf("got %v, want the TransactionError of the retry's conflict", err)
		}
		if drop.seen.Load() != 2 {
			t.Errorf("%d batch requests, want 2 (the lost one and the retry)", drop.seen.Load())
		}
		if got, err := tbl.Get(ctx, "t", "o'k"); err != nil || got.N != 2 {
			t.Errorf("the lost transaction was applied, yet %+v, %v", got, err)
		}
	})
	t.Run("transaction update and delete", func(t *testing.T) {
		a, b := getETag(t, tbl, "t", "a"), getETag(t, tbl, "t", "o'k")
		drop.arm(1, isBatch, nil)
		_, err := tbl.Transaction(ctx,
			tablekit.MergeAction(wireItem{PK: "t", RK: "a", N: 10}, a),
			tablekit.DeleteAction(wireItem{PK: "t", RK: "o'k"}, b))
		unknownOnly(t, "transaction", err, tablekit.ErrPreconditionFailed)
		if got, _ := tbl.Get(ctx, "t", "a"); got.N != 10 {
			t.Errorf("after the update: %+v", got)
		}
	})
	t.Run("the same content written by another writer", func(t *testing.T) {
		// Two read-modify-write cycles of a counter read the same value and
		// write the same number; the other writer wins. This write failed,
		// though the stored entity holds exactly what it wrote: reporting
		// success would lose an increment.
		etag := getETag(t, tbl, "t", "a")
		other := func() error {
			_, err := tbl.Merge(context.Background(), wireItem{PK: "t", RK: "a", N: 11}, etag)
			return err
		}
		drop.arm(1, isBatch, nil)
		drop.mu.Lock()
		drop.before = other
		drop.mu.Unlock()
		_, err := tbl.Transaction(ctx, tablekit.MergeAction(wireItem{PK: "t", RK: "a", N: 11}, etag))
		drop.mu.Lock()
		drop.before = nil
		drop.mu.Unlock()
		if err == nil {
			t.Fatal("a write the service refused (another writer stored the same content first) was reported as a success")
		}
		if !errors.Is(err, tablekit.ErrPreconditionFailed) && !errors.Is(err, tablekit.ErrOutcomeUnknown) {
			t.Fatalf("got %v, want a conflict or an unknown outcome", err)
		}
	})
	t.Run("changed by another writer", func(t *testing.T) {
		etag := getETag(t, tbl, "t", "a")
		other := func() error {
			_, err := tbl.Upsert(context.Background(), wireItem{PK: "t", RK: "a", N: 99})
			return err
		}
		drop.arm(1, isBatch, other)
		_, err := tbl.Transaction(ctx, tablekit.MergeAction(wireItem{PK: "t", RK: "a", N: 11}, etag))
		var te *tablekit.TransactionError
		if !errors.Is(err, tablekit.ErrOutcomeUnknown) || errors.Is(err, tablekit.ErrPreconditionFailed) || !errors.As(err, &te) || te.Index != 0 {
			t.Fatalf("got %v, want a TransactionError matching ErrOutcomeUnknown only", err)
		}
	})
	t.Run("single writes", func(t *testing.T) {
		drop.arm(1, isMethod(http.MethodPost), nil)
		_, err := tbl.Insert(ctx, wireItem{PK: "s", RK: "1", N: 1})
		unknownOnly(t, "insert", err, tablekit.ErrAlreadyExists)
		etag := getETag(t, tbl, "s", "1")
		drop.arm(1, isMethod(http.MethodPut), nil)
		_, err = tbl.Update(ctx, wireItem{PK: "s", RK: "1", N: 2}, etag)
		unknownOnly(t, "update", err, tablekit.ErrPreconditionFailed)
		if got, _ := tbl.Get(ctx, "s", "1"); got.N != 2 {
			t.Errorf("after the update whose answer was lost: %+v", got)
		}
		etag = getETag(t, tbl, "s", "1")
		// A lost delete: the entity is gone, but nothing tells whether this
		// call deleted it or found it gone, so the outcome is unknown.
		drop.arm(1, isMethod(http.MethodDelete), nil)
		if err := tbl.Delete(ctx, "s", "1", etag); !errors.Is(err, tablekit.ErrOutcomeUnknown) || errors.Is(err, tablekit.ErrNotFound) {
			t.Fatalf("delete: %v, want only ErrOutcomeUnknown", err)
		}
		if _, err := tbl.Get(ctx, "s", "1"); !errors.Is(err, tablekit.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
		// DeleteIfExists, whose point is that the entity is gone, says so.
		if _, err := tbl.Insert(ctx, wireItem{PK: "s", RK: "1"}); err != nil {
			t.Fatal(err)
		}
		drop.arm(1, isMethod(http.MethodDelete), nil)
		if existed, err := tbl.DeleteIfExists(ctx, "s", "1"); err != nil || existed {
			t.Fatalf("DeleteIfExists after a lost answer: %v, %v; want false, nil", existed, err)
		}
	})
	t.Run("no answer at all", func(t *testing.T) {
		drop.arm(-1, isMethod(http.MethodPut), nil)
		_, err := tbl.Upsert(ctx, wireItem{PK: "s", RK: "2"})
		var op *net.OpError
		var re *tablekit.RequestError
		if !errors.Is(err, tablekit.ErrOutcomeUnknown) || !errors.As(err, &op) || !errors.As(err, &re) || re.Op != "Upsert" {
			t.Fatalf("got %v, want a RequestError matching ErrOutcomeUnknown", err)
		}
		if n := drop.seen.Load(); n != 4 {
			t.Errorf("%d tries, want 4", n)
		}
		drop.arm(0, nil, nil)
	})
	t.Run("a real conflict stays a conflict", func(t *testing.T) {
		_, err := tbl.Insert(ctx, wireItem{PK: "s", RK: "2"})
		if !errors.Is(err, tablekit.ErrAlreadyExists) || errors.Is(err, tablekit.ErrOutcomeUnknown) {
			t.Fatalf("got %v", err)
		}
		if !strings.Contains(err.Error(), `:s/2"`) {
			t.Errorf("error does not name the entity: %v", err)
		}
	})
}

// loseThenThrottle lets the first matching request through and loses its
// answer, then answers every later try of a matching request 503
// ServerBusy without sending it, as a throttled front end does.
type loseThenThrottle struct {
	match func(*http.Request) bool
	tries atomic.Int32
}

func (p *loseThenThrottle) Do(req *policy.Request) (*http.Response, error) {
	if !p.match(req.Raw()) {
		return req.Next()
	}
	if p.tries.Add(1) == 1 {
		resp, err := req.Next()
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	body := `{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}`
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Server Busy", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {"ServerBusy"}},
		Body:    io.NopCloser(strings.NewReader(body)),
		Request: req.Raw()}, nil
}

// TestLostAnswerThenThrottled: a write whose first try was applied but
// whose answer was lost, and whose retries were all throttled, may have
// been applied: the error matches ErrOutcomeUnknown as well as
// ErrThrottled (it used to say only "throttled", for a stored entity).
func TestLostAnswerThenThrottled(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		match func(*http.Request) bool
		write func(tbl *tablekit.Table[wireItem]) error
	}{
		{"insert", func(r *http.Request) bool {
			return isMethod(http.MethodPost)(r) && !strings.HasSuffix(r.URL.Path, "/Tables")
		}, func(tbl *tablekit.Table[wireItem]) error {
			_, err := tbl.Insert(ctx, wireItem{PK: "p", RK: "insert", N: 1})
			return err
		}},
		{"transaction", isBatch, func(tbl *tablekit.Table[wireItem]) error {
			_, err := tbl.Transaction(ctx, tablekit.InsertAction(wireItem{PK: "p", RK: "batch", N: 1}))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &loseThenThrottle{match: tc.match}
			acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{p}, Retry: policy.RetryOptions{MaxRetries: 1, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}}})
			tbl, err := tablekit.OpenTable[wireItem](acct, testenv.CreateTable(t, acct), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.write(tbl)
			if !errors.Is(err, tablekit.ErrOutcomeUnknown) || !errors.Is(err, tablekit.ErrThrottled) || !strings.Contains(err.Error(), "may have been applied") {
				t.Fatalf("got %v; want an error matching both ErrOutcomeUnknown and ErrThrottled", err)
			}
			if p.tries.Load() != 2 {
				t.Errorf("%d tries, want 2", p.tries.Load())
			}
		})
	}
}

// TestEmptyPagesAsTheyCome: Azure may answer a query page with no entities
// and a continuation (after 5 s of work, at a partition boundary). Here a
// policy empties the first page's answer, keeping its continuation:
// QueryPage returns that page as it came, empty and with a Continuation,
// and the next QueryPage goes on from there; Query reads past it.
func TestEmptyPagesAsTheyCome(t *testing.T) {
	ctx := context.Background()
	var empty atomic.Int32
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(req *policy.Request) (*http.Response, error) {
		resp, err := req.Next()
		if err == nil && req.Raw().Method == http.MethodGet && strings.HasSuffix(req.Raw().URL.Path, "()") && empty.Add(-1) >= 0 {
			resp.Body = io.NopCloser(strings.NewReader(`{"value":[]}`))
		}
		return resp, err
	})}}})
	tbl, err := tablekit.OpenTable[wireItem](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rk := range []string{"a", "b", "c"} {
		if _, err := tbl.Insert(ctx, wireItem{PK: "p", RK: rk}); err != nil {
			t.Fatal(err)
		}
	}
	order := queryRKs(t, tbl, tablekit.PartitionEq("p")) // a, b, c on Table storage
	empty.Store(1)
	opts := &tablekit.QueryOptions{PageSize: 1}
	page, err := tbl.QueryPage(ctx, tablekit.PartitionEq("p"), opts)
	if err != nil || len(page.Items) != 0 || page.Continuation == "" {
		t.Fatalf("first page: %+v, %v; want an empty page with a continuation", page, err)
	}
	// The next page with an entity (Azure's paging may empty more).
	for len(page.Items) == 0 && page.Continuation != "" && err == nil {
		opts.Continuation = page.Continuation
		page, err = tbl.QueryPage(ctx, tablekit.PartitionEq("p"), opts)
	}
	if err != nil || len(page.Items) != 1 || page.Items[0].RK != order[1] {
		t.Fatalf("second page: %+v, %v; want %s", page, err, order[1])
	}

	empty.Store(1)
	var got []string
	for e, err := range tbl.Query(ctx, tablekit.PartitionEq("p"), &tablekit.QueryOptions{PageSize: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.RK)
	}
	if !slices.Equal(got, order[1:]) {
		t.Errorf("Query past an empty page: %q, want %q", got, order[1:])
	}
}
