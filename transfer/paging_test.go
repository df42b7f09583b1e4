package transfer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// azurePaging is a front that pages as Azure may (short pages, empty pages
// with a continuation token), seeded.
func azurePaging(seed uint64) *azurite.FrontOptions {
	return &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Paging: true, Seed: seed}
}

// emptyPage reports whether resp is a query page with no entity and a
// continuation token, leaving its body readable.
func emptyPage(resp *http.Response) bool {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var doc struct{ Value []json.RawMessage }
	return err == nil && json.Unmarshal(body, &doc) == nil && len(doc.Value) == 0 && resp.Header.Get("x-ms-continuation-NextPartitionKey") != ""
}

// TestPurgeBudgetWithEmptyPages: the budget of a purge is checked between
// every two pages, empty ones included, so that no page is listed once it
// is spent, and each budgeted run makes progress. The budget is measured
// by a clock that advances one second per listing request: each run, on a
// budget of 1 s, lists exactly one page, deletes what it listed (also the
// start of a partition a full transaction would wait for), and the runs
// together delete everything.
func TestPurgeBudgetWithEmptyPages(t *testing.T) {
	acct := testenv.Account(t, nil)
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ctx := ctxFor(t)
			tbl := newTable(t, acct)
			seedMany(t, tbl, 5, 600)
			var listed atomic.Int64
			count := policyFunc(func(r *policy.Request) (*http.Response, error) {
				if isQuery(r) {
					listed.Add(1)
				}
				return r.Next()
			})
			_, _, tbls := behindFront(t, azurePaging(seed), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{count}}}, tbl)
			start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			cp := transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "purge.checkpoint"))
			opts := transfer.PurgeOptions{Options: transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp}, Scope: transfer.Scope{From: "p", To: "q"}, PageSize: 60}, Budget: time.Second}
			var deleted int64
			runs := 0
			for ; runs < 200; runs++ {
				before := listed.Load()
				clock := func() time.Time { return start.Add(time.Duration(listed.Load()) * time.Second) }
				res, err := transfer.PurgeWithClock(ctx, tbls[0], &opts, clock)
				if err != nil {
					t.Fatalf("run %d: %+v, %v", runs, res, err)
				}
				if n := listed.Load() - before; n != 1 {
					t.Errorf("run %d listed %d pages on a budget of one", runs, n)
				}
				deleted = res.Deleted
				opts.Resume = true
				if res.Complete {
					break
				}
			}
			t.Logf("%d runs", runs+1)
			if deleted != 600 {
				t.Errorf("the runs deleted %d, want 600", deleted)
			}
			if left := readAll(t, tbl); len(left) != 0 {
				t.Errorf("%d entities left after %d runs", len(left), runs+1)
			}
		})
	}
}

// TestExportStoppedInEmptyPages: an export interrupted right after the
// service answered an empty page with a continuation token saves that
// token in its checkpoint, and the resumed export goes on from it (it
// does not read the range again from the start); the file ends with every
// entity once.
func TestExportStoppedInEmptyPages(t *testing.T) {
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	es := seedMany(t, tbl, 8, 1600)
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ctx := ctxFor(t)
			cctx, cancel := context.WithCancel(ctx)
			var (
				mu        sync.Mutex
				emptyTok  string // NextPartitionKey of the first empty page
				stopped   bool
				firstNext *string // NextPartitionKey of the resumed run's first request
				resumed   bool
			)
			watch := policyFunc(func(r *policy.Request) (*http.Response, error) {
				if !isQuery(r) {
					return r.Next()
				}
				next := r.Raw().URL.Query().Get("NextPartitionKey")
				mu.Lock()
				if resumed && firstNext == nil {
					firstNext = &next
				}
				if !resumed && emptyTok != "" && next == emptyTok && !stopped {
					stopped = true
					cancel() // interrupted in the empty stretch
				}
				mu.Unlock()
				resp, err := r.Next()
				if err == nil && !resumed && emptyPage(resp) {
					mu.Lock()
					if emptyTok == "" {
						emptyTok = resp.Header.Get("x-ms-continuation-NextPartitionKey")
					}
					mu.Unlock()
				}
				return resp, err
			})
			_, _, tbls := behindFront(t, azurePaging(seed), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{watch}}}, tbl)
			path := filepath.Join(t.TempDir(), "out.jsonl")
			cp := transfer.NewFileCheckpoint(path + ".checkpoint")
			opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp}, Concurrency: 1, MaxProbes: -1, PageSize: 50}
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := transfer.Export(cctx, tbls[0], f, &opts)
			f.Close()
			if !stopped {
				t.Fatalf("no empty page in the export (%+v, %v): the test tests nothing", res, err)
			}
			if !errors.Is(err, context.Canceled) || res.Complete {
				t.Fatalf("interrupted export: %+v, %v", res, err)
			}
			data, err := cp.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var saved struct{ Ranges []struct{ Token string } }
			if err := json.Unmarshal(data, &saved); err != nil || len(saved.Ranges) != 1 || saved.Ranges[0].Token == "" {
				t.Fatalf("checkpoint %s, %v: want one range with a token", data, err)
			}

			off, _, err := transfer.ExportResumeOffset(ctx, cp)
			if err != nil {
				t.Fatal(err)
			}
			f, err = os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Truncate(off)
			f.Seek(off, io.SeekStart)
			mu.Lock()
			resumed = true
			mu.Unlock()
			opts.Resume = true
			res, err = transfer.Export(ctx, tbls[0], f, &opts)
			f.Close()
			if err != nil || !res.Complete || res.Entities != int64(len(es)) {
				t.Fatalf("resumed export: %+v, %v", res, err)
			}
			if firstNext == nil || *firstNext != emptyTok {
				got := "(none)"
				if firstNext != nil {
					got = *firstNext
				}
				t.Errorf("the resumed export started at %q, want the empty page's token %q", got, emptyTok)
			}
			f, _ = os.Open(path)
			defer f.Close()
			seen := readKeys(t, f)
			for _, e := range es {
				if n := seen[[2]string{e.PartitionKey, e.RowKey}]; n != 1 {
					t.Errorf("%s/%s exported %d times", e.PartitionKey, e.RowKey, n)
				}
			}
		})
	}
}
