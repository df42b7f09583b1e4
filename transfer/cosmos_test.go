package transfer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// behindFront opens the tables named like tbls through a new front with
// opts before the test account's table endpoint, on an Account with
// topts (nil: defaults). The front is closed when the test ends.
func behindFront(t *testing.T, fopts *azurite.FrontOptions, aopts *tablekit.Options, tbls ...*tablekit.Table[tablekit.Entity]) (*azurite.Front, *tablekit.Account, []*tablekit.Table[tablekit.Entity]) {
	t.Helper()
	cs := testenv.ConnectionString(t)
	front, err := azurite.NewFront(context.Background(), azurite.Endpoints{Table: tableEndpointOf(cs)}, testenv.FrontBefore(fopts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Close() })
	acct, err := tablekit.Open(withTableEndpoint(cs, front.Endpoints().Table), aopts)
	if err != nil {
		t.Fatal(err)
	}
	var out []*tablekit.Table[tablekit.Entity]
	for _, tbl := range tbls {
		ft, err := tablekit.OpenTable[tablekit.Entity](acct, tbl.Name(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ft)
	}
	return front, acct, out
}

// cosmosServices are the Options.Service of the Accounts of the Cosmos DB
// tests: said, and found out from the answers (the front's address does
// not say Cosmos DB), each operation then on a fresh Account that has
// read nothing yet.
var cosmosServices = []tablekit.Service{tablekit.ServiceCosmosDB, tablekit.ServiceAuto}

// cosmosScans are the ways of reading a scope the Cosmos DB tests try:
// the defaults, readers that split running ranges where they can (one
// initial range, small pages), sampled ranges, and one reader.
var cosmosScans = []struct {
	name string
	scan scanOpts
}{
	{"defaults", scanOpts{}},
	{"splitting", scanOpts{Concurrency: 6, MaxProbes: 1, PageSize: 40}},
	{"sampled", scanOpts{Concurrency: 4, MaxProbes: 64, PageSize: 50}},
	{"one reader", scanOpts{Concurrency: 1, PageSize: 100}},
}

// TestCosmosExportCountCopy: on Azure Cosmos DB for Table (the front in
// Cosmos mode: results in no key order, not even within a partition), an
// export has every entity exactly once, a count is exact, and a copy
// writes every entity, whatever the ranges and splits.
func TestCosmosExportCountCopy(t *testing.T) {
	acct := testenv.Account(t, nil)
	src := newTable(t, acct)
	// 2,000 entities in 40 partitions at full size (TABLEKIT_CHAOS_FULL=1;
	// the size hole 1 was found at), 800 in 20 in CI: the front in Cosmos
	// mode runs each query to its end for every page it answers.
	n, parts := chaos.Size(800, 2000), chaos.Size(20, 40)
	es := seedMany(t, src, parts, n)
	for _, svc := range cosmosServices {
		for _, seed := range []uint64{1, 2} {
			// Seed 2 pages as Azure may too: short pages, empty pages.
			paging := seed == 2
			fopts := &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Seed: seed, Paging: paging}
			on := func(tbl *tablekit.Table[tablekit.Entity]) *tablekit.Table[tablekit.Entity] {
				_, _, tbls := behindFront(t, fopts, &tablekit.Options{Service: svc}, tbl)
				return tbls[0]
			}
			for _, c := range cosmosScans {
				t.Run(fmt.Sprintf("%v/seed %d/%s", svc, seed, c.name), func(t *testing.T) {
					cosmosExportCountCopy(t, acct, src, on, es, parts, c.scan)
				})
			}
		}
	}
}

// cosmosExportCountCopy exports, counts and copies src, which holds es in
// parts partitions, each through on (a table of its own Account), and
// checks the results.
func cosmosExportCountCopy(t *testing.T, acct *tablekit.Account, src *tablekit.Table[tablekit.Entity], on func(*tablekit.Table[tablekit.Entity]) *tablekit.Table[tablekit.Entity], es []tablekit.Entity, parts int, scan scanOpts) {
	n := len(es)
	seen, res := exportKeys(t, on(src), ptr(withScan(transfer.Options{}, scan)))
	missing, twice := 0, 0
	for _, e := range es {
		switch seen[[2]string{e.PartitionKey, e.RowKey}] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	if missing > 0 || twice > 0 || len(seen) != len(es) || !res.Complete || res.Entities != int64(len(es)) {
		t.Errorf("export: %d of %d entities missing, %d more than once, %d keys; result %+v", missing, len(es), twice, len(seen), res)
	}
	t.Logf("export: %d ranges, %d probes", res.Ranges, res.Probes)
	// Running ranges are not split on Cosmos DB: the sampler must find the
	// parallel ranges up front.
	if scan.MaxProbes != 1 && scan.Concurrency != 1 && res.Ranges < 8 {
		t.Errorf("export in %d ranges (%d probes); want at least 8", res.Ranges, res.Probes)
	}

	cnt, err := transfer.Count(ctxFor(t), on(src), ptr(withScan(transfer.Options{}, scan)))
	if err != nil || !cnt.Complete || cnt.Entities != int64(n) || cnt.Partitions != int64(parts) || cnt.DeleteTransactions != int64(parts) {
		t.Errorf("count %+v, %v; want %d entities, %d partitions, %d delete transactions", cnt, err, n, parts, parts)
	}

	dst := newTable(t, acct)
	cres, err := transfer.Copy(ctxFor(t), on(src), on(dst), transfer.Insert, ptr(withScan(transfer.Options{}, scan)))
	if err != nil || !cres.Complete || cres.Written != int64(n) || cres.Failed != 0 {
		t.Errorf("copy: %d read, %d written, %d failed, complete %v; %v", cres.Read, cres.Written, cres.Failed, cres.Complete, err)
	}
	sameEntities(t, keyed(es), readAll(t, dst))
}

// TestCosmosPurge: a purge on Cosmos DB (paged as Azure may) leaves
// nothing in its scope, touches nothing outside it, counts every delete,
// and groups each page's deletes by partition.
func TestCosmosPurge(t *testing.T) {
	acct := testenv.Account(t, nil)
	for _, svc := range cosmosServices {
		for _, c := range cosmosScans {
			t.Run(fmt.Sprintf("%v/%s", svc, c.name), func(t *testing.T) { cosmosPurge(t, acct, svc, c.scan) })
		}
	}
}

func cosmosPurge(t *testing.T, acct *tablekit.Account, svc tablekit.Service, scan scanOpts) {
	tbl := newTable(t, acct)
	es := seedMany(t, tbl, 40, 2000)
	keep := []tablekit.Entity{{PartitionKey: "a-before", RowKey: "1"}, {PartitionKey: "z-after", RowKey: "1"}}
	seed(t, tbl, keep)
	_, _, tbls := behindFront(t, &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Paging: true, Seed: 3}, &tablekit.Options{Service: svc}, tbl)
	res, err := transfer.Purge(ctxFor(t), tbls[0], ptr(withScanP(transfer.PurgeOptions{Options: transfer.Options{Scope: transfer.Scope{From: "p", To: "q"}}}, scan)))
	if err != nil || !res.Complete || res.Deleted != int64(len(es)) || res.Listed != int64(len(es)) || res.Gone != 0 || res.Changed != 0 {
		t.Errorf("purge %+v, %v", res, err)
	}
	// A page's deletes go in one transaction per partition it holds (50
	// entities each): at most 40 per listing page, not one per entity
	// (which small pages may come to).
	t.Logf("purge: %d delete transactions, %d listing pages", res.DeleteTransactions, res.Pages)
	if res.DeleteTransactions > 40*res.Pages {
		t.Errorf("purge: %d delete transactions for %d entities in 40 partitions, %d listing pages", res.DeleteTransactions, res.Deleted, res.Pages)
	}
	left := readAll(t, tbl)
	inScope := 0
	for k := range left {
		if k[0] >= "p" && k[0] < "q" {
			inScope++
		}
	}
	if inScope > 0 || len(left) != len(keep) {
		t.Errorf("%d entities left in scope, %d in all; want 0 and the %d outside", inScope, len(left), len(keep))
	}
}

// TestCosmosCountResumes: a count on Cosmos DB stopped halfway resumes
// with the partial counts of its ranges and ends exact.
func TestCosmosCountResumes(t *testing.T) {
	for _, svc := range cosmosServices {
		t.Run(svc.String(), func(t *testing.T) { cosmosCountResumes(t, svc) })
	}
}

func cosmosCountResumes(t *testing.T, svc tablekit.Service) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	seedMany(t, tbl, 40, 2000)
	var pages atomic.Int32
	cctx, cancel := context.WithCancel(ctx)
	stop := policyFunc(func(r *policy.Request) (*http.Response, error) {
		if isQuery(r) && pages.Add(1) == 25 {
			cancel()
		}
		return r.Next()
	})
	fopts := &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Seed: 4}
	_, _, tbls := behindFront(t, fopts, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{stop}}, Service: svc}, tbl)
	cp := transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "count.checkpoint"))
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp}, Concurrency: 3, PageSize: 40, Boundaries: []string{"p013", "p027"}}
	res, err := transfer.Count(cctx, tbls[0], &opts)
	if !errors.Is(err, context.Canceled) || res.Complete || res.Entities == 0 || res.Entities >= 2000 {
		t.Fatalf("stopped count: %+v, %v", res, err)
	}
	first := res.Pages
	opts.Resume = true
	_, _, tbls = behindFront(t, fopts, &tablekit.Options{Service: svc}, tbl) // another process
	res, err = transfer.Count(ctx, tbls[0], &opts)
	if err != nil || !res.Complete || res.Entities != 2000 || res.Partitions != 40 || res.DeleteTransactions != 40 {
		t.Errorf("resumed count: %+v, %v; want 2000 entities, 40 partitions, 40 delete transactions", res, err)
	}
	// 2,000 entities in pages of 40 over 3 ranges: at most 52 pages in one
	// go; the resumed run went on from the tokens.
	if first+res.Pages > 53 {
		t.Errorf("%d pages, then %d resumed: the resumed count started over", first, res.Pages)
	}
}

// TestCosmosCountResumesLargeTally: a range whose open tally is too large
// for a checkpoint (more than 256 KiB of PartitionKeys) is saved as not
// started, and the resumed count, which reads it again, is exact.
func TestCosmosCountResumesLargeTally(t *testing.T) {
	for _, svc := range cosmosServices {
		t.Run(svc.String(), func(t *testing.T) { cosmosCountResumesLargeTally(t, svc) })
	}
}

func cosmosCountResumesLargeTally(t *testing.T, svc tablekit.Service) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	var es []tablekit.Entity
	for i := range 1000 {
		es = append(es, tablekit.Entity{PartitionKey: fmt.Sprintf("%04d%s", i, strings.Repeat("k", 400)), RowKey: "1"})
	}
	seed(t, tbl, es)
	var pages atomic.Int32
	cctx, cancel := context.WithCancel(ctx)
	stop := policyFunc(func(r *policy.Request) (*http.Response, error) {
		if isQuery(r) && pages.Add(1) == 8 {
			cancel()
		}
		return r.Next()
	})
	fopts := &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Seed: 5}
	_, _, tbls := behindFront(t, fopts, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{stop}}, Service: svc}, tbl)
	cp := transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "count.checkpoint"))
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp}, Concurrency: 1, PageSize: 100}
	res, err := transfer.Count(cctx, tbls[0], &opts)
	if !errors.Is(err, context.Canceled) || res.Complete || res.Entities < 700 {
		t.Fatalf("stopped count: %+v, %v; want 7 pages of 100 counted", res, err)
	}
	data, err := cp.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Ranges []struct {
			Token string
			Read  int64
			Tally map[string]int64
		}
		Counts struct{ Read int64 }
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved.Ranges) != 1 {
		t.Fatalf("checkpoint with %d ranges, want 1", len(saved.Ranges))
	}
	if r := saved.Ranges[0]; r.Token != "" || r.Read != 0 || len(r.Tally) != 0 || saved.Counts.Read != 0 || len(data) > 64<<10 {
		t.Fatalf("checkpoint of %d bytes: a token of %d bytes, %d read, %d partitions tallied, %d read in all; want the range saved as not started",
			len(data), len(r.Token), r.Read, len(r.Tally), saved.Counts.Read)
	}
	opts.Resume = true
	_, _, tbls = behindFront(t, fopts, &tablekit.Options{Service: svc}, tbl) // another process
	res, err = transfer.Count(ctx, tbls[0], &opts)
	if err != nil || !res.Complete || res.Entities != 1000 || res.Partitions != 1000 || res.DeleteTransactions != 1000 {
		t.Errorf("resumed count: %+v, %v; want 1000 entities in 1000 partitions", res, err)
	}
}

// TestCosmosExportCopyResume: an export and a copy on Cosmos DB stopped
// after a few pages resume, in another process (a fresh Account), from
// their checkpoints: the export holds every entity exactly once, the copy
// wrote every entity.
func TestCosmosExportCopyResume(t *testing.T) {
	acct := testenv.Account(t, nil)
	src := newTable(t, acct)
	es := seedMany(t, src, 20, 800)
	for _, svc := range cosmosServices {
		for _, c := range cosmosScans {
			t.Run(fmt.Sprintf("%v/%s", svc, c.name), func(t *testing.T) {
				ctx := ctxFor(t)
				fopts := &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Paging: true, Seed: 6}
				// stopped opens the tables on an Account whose context
				// ends at its 6th listing request.
				stopped := func(tbls ...*tablekit.Table[tablekit.Entity]) (context.Context, []*tablekit.Table[tablekit.Entity]) {
					var pages atomic.Int32
					cctx, cancel := context.WithCancel(ctx)
					t.Cleanup(cancel)
					stop := policyFunc(func(r *policy.Request) (*http.Response, error) {
						if isQuery(r) && pages.Add(1) == 6 {
							cancel()
						}
						return r.Next()
					})
					_, _, out := behindFront(t, fopts, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{stop}}, Service: svc}, tbls...)
					return cctx, out
				}
				fresh := func(tbls ...*tablekit.Table[tablekit.Entity]) []*tablekit.Table[tablekit.Entity] {
					_, _, out := behindFront(t, fopts, &tablekit.Options{Service: svc}, tbls...)
					return out
				}

				// Export.
				path := filepath.Join(t.TempDir(), "export.jsonl")
				cp := transfer.NewFileCheckpoint(path + ".checkpoint")
				opts := withScan(transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp, CheckpointEvery: time.Hour}}, c.scan)
				cctx, tbls := stopped(src)
				f, err := openExport(ctx, path, cp, false)
				if err != nil {
					t.Fatal(err)
				}
				res, err := transfer.Export(cctx, tbls[0], f, &opts)
				f.Close()
				if !errors.Is(err, context.Canceled) || res.Complete {
					t.Fatalf("stopped export: %+v, %v", res, err)
				}
				opts.Resume = true
				if f, err = openExport(ctx, path, cp, true); err != nil {
					t.Fatal(err)
				}
				res, err = transfer.Export(ctx, fresh(src)[0], f, &opts)
				f.Close()
				if err != nil || !res.Complete {
					t.Fatalf("resumed export: %+v, %v", res, err)
				}
				f, err = os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				seen := readKeys(t, f)
				f.Close()
				missing, twice := 0, 0
				for _, e := range es {
					switch seen[[2]string{e.PartitionKey, e.RowKey}] {
					case 0:
						missing++
					case 1:
					default:
						twice++
					}
				}
				if missing > 0 || twice > 0 || len(seen) != len(es) || res.Entities != int64(len(es)) {
					t.Errorf("resumed export: %d of %d entities missing, %d more than once; result %+v", missing, len(es), twice, res)
				}

				// Copy.
				dst := newTable(t, acct)
				ccp := transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "copy.checkpoint"))
				copts := withScan(transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: ccp, CheckpointEvery: time.Hour}}, c.scan)
				cctx, tbls = stopped(src, dst)
				cres, err := transfer.Copy(cctx, tbls[0], tbls[1], transfer.Insert, &copts)
				if !errors.Is(err, context.Canceled) || cres.Complete {
					t.Fatalf("stopped copy: %+v, %v", cres, err)
				}
				copts.Resume = true
				tbls = fresh(src, dst)
				cres, err = transfer.Copy(ctx, tbls[0], tbls[1], transfer.Insert, &copts)
				if err != nil || !cres.Complete || cres.Failed != 0 {
					t.Errorf("resumed copy: %+v, %v", cres, err)
				}
				sameEntities(t, keyed(es), readAll(t, dst))
			})
		}
	}
}

// TestCosmosScopeKept: on Cosmos DB, a job over a key range of the table
// (the sampler's probes find some key of their interval, not the first)
// reads that range only: the ranges it plans stay inside the scope. An
// export wrote, a count counted and a purge deleted entities past the
// scope's end.
func TestCosmosScopeKept(t *testing.T) {
	acct := testenv.Account(t, nil)
	src := newTable(t, acct)
	es := seedMany(t, src, 6, 600)
	var want []tablekit.Entity
	for _, e := range es {
		if e.PartitionKey >= "p001" && e.PartitionKey < "p003" {
			want = append(want, e)
		}
	}
	if len(want) == 0 || len(want) == len(es) {
		t.Fatalf("the scope holds %d of %d entities", len(want), len(es))
	}
	for _, svc := range cosmosServices {
		for _, c := range cosmosScans {
			t.Run(fmt.Sprintf("%v/%s", svc, c.name), func(t *testing.T) {
				fopts := &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Paging: true, Seed: 9}
				_, _, tbls := behindFront(t, fopts, &tablekit.Options{Service: svc}, src)
				scope := transfer.Scope{From: "p001", To: "p003"}
				seen, res := exportKeys(t, tbls[0], ptr(withScan(transfer.Options{Scope: scope}, c.scan)))
				if len(seen) != len(want) || res.Entities != int64(len(want)) {
					t.Errorf("export of [p001, p003): %d keys (%d lines) in %d ranges, want the %d of the scope", len(seen), res.Entities, res.Ranges, len(want))
				}
				for k := range seen {
					if k[0] < "p001" || k[0] >= "p003" {
						t.Errorf("exported %s/%s, outside the scope", k[0], k[1])
						break
					}
				}
				cnt, err := transfer.Count(ctxFor(t), tbls[0], ptr(withScan(transfer.Options{Scope: scope}, c.scan)))
				if err != nil || cnt.Entities != int64(len(want)) || cnt.Partitions != 2 {
					t.Errorf("count of [p001, p003): %+v, %v; want %d entities in 2 partitions", cnt, err, len(want))
				}
				victim := newTable(t, acct)
				seed(t, victim, es)
				_, _, vtbls := behindFront(t, fopts, &tablekit.Options{Service: svc}, victim)
				res2, err := transfer.Purge(ctxFor(t), vtbls[0], ptr(withScanP(transfer.PurgeOptions{Options: transfer.Options{Scope: scope}}, c.scan)))
				left := readAll(t, victim)
				if err != nil || res2.Deleted != int64(len(want)) || len(left) != len(es)-len(want) {
					t.Errorf("purge of [p001, p003): %+v, %v; %d entities left, want the %d outside", res2, err, len(left), len(es)-len(want))
				}
			})
		}
	}
}

// TestCosmosNoSplitOnceUnordered: an idle reader that began to split a
// running range while its Account did not know it was on Cosmos DB does
// not split it once an answer shows Cosmos DB: the running range may have
// read keys past the split point already, which the new range would read
// again. A resumed export (its one range planned by the stopped run, so
// no probe of its own tells) holds its range's first page until the split
// has sent a probe, and the probe until the range has asked for its
// second page (so it has handled its first, in no key order).
func TestCosmosNoSplitOnceUnordered(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	src := newTable(t, acct)
	es := seedMany(t, src, 20, 800)
	fopts := &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Seed: 3}
	path := filepath.Join(t.TempDir(), "export.jsonl")
	cp := transfer.NewFileCheckpoint(path + ".checkpoint")

	// The stopped run: one reader, one range, stopped at its first page.
	cctx, cancel := context.WithCancel(ctx)
	stop := policyFunc(func(r *policy.Request) (*http.Response, error) {
		if isQuery(r) {
			cancel()
			return nil, context.Canceled
		}
		return r.Next()
	})
	_, _, tbls := behindFront(t, fopts, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{stop}}}, src)
	f, err := openExport(ctx, path, cp, false)
	if err != nil {
		t.Fatal(err)
	}
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp}, Concurrency: 1, PageSize: 40}
	if res, err := transfer.Export(cctx, tbls[0], f, &opts); !errors.Is(err, context.Canceled) || res.Complete {
		t.Fatalf("stopped export: %+v, %v", res, err)
	}
	f.Close()

	// The resumed run, two readers: the idle one splits the range.
	var (
		probes, pages   atomic.Int32
		probed, second  = make(chan struct{}), make(chan struct{})
		probeOnce, once sync.Once
	)
	wait := func(c chan struct{}) {
		select {
		case <-c:
		case <-time.After(30 * time.Second):
		}
	}
	hold := policyFunc(func(r *policy.Request) (*http.Response, error) {
		if isQuery(r) {
			if r.Raw().URL.Query().Get("$top") == "1" {
				probes.Add(1)
				probeOnce.Do(func() { close(probed) })
				wait(second)
			} else {
				switch pages.Add(1) {
				case 1:
					wait(probed)
				case 2:
					once.Do(func() { close(second) })
				}
			}
		}
		return r.Next()
	})
	_, _, tbls = behindFront(t, fopts, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{hold}}}, src)
	opts.Concurrency, opts.MaxProbes, opts.Resume = 2, 4, true
	if f, err = openExport(ctx, path, cp, true); err != nil {
		t.Fatal(err)
	}
	res, err := transfer.Export(ctx, tbls[0], f, &opts)
	f.Close()
	if err != nil || !res.Complete {
		t.Fatalf("resumed export: %+v, %v", res, err)
	}
	if f, err = os.Open(path); err != nil {
		t.Fatal(err)
	}
	seen := readKeys(t, f)
	f.Close()
	twice := 0
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	if len(seen) != len(es) || twice > 0 || res.Entities != int64(len(es)) {
		t.Errorf("export: %d keys, %d more than once, %d lines in %d ranges; want each of the %d once", len(seen), twice, res.Entities, res.Ranges, len(es))
	}
	if probes.Load() == 0 {
		t.Error("no split was tried: the test tests nothing")
	}
}
