package transfer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/chaos"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// behindFront opens the tables named like tbls through a new front with
// opts before the test account's table endpoint, on an Account with
// topts (nil: defaults). The front is closed when the test ends.
func behindFront(t *testing.T, fopts *azurite.FrontOptions, aopts *tablekit.Options, tbls ...*tablekit.Table[tablekit.Entity]) (*azurite.Front, *tablekit.Account, []*tablekit.Table[tablekit.Entity]) {
	t.Helper()
	cs := testenv.ConnectionString(t)
	front, err := azurite.NewFront(context.Background(), azurite.Endpoints{Table: tableEndpointOf(cs)}, fopts)
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
	for _, seed := range []uint64{1, 2} {
		// Seed 2 pages as Azure may too: short pages, empty pages.
		paging := seed == 2
		_, _, tbls := behindFront(t, &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Seed: seed, Paging: paging}, &tablekit.Options{Service: tablekit.ServiceCosmosDB}, src)
		csrc := tbls[0]
		for _, c := range cosmosScans {
			t.Run(fmt.Sprintf("seed %d/%s", seed, c.name), func(t *testing.T) {
				seen, res := exportKeys(t, csrc, ptr(withScan(transfer.Options{}, c.scan)))
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
				// Running ranges are not split on Cosmos DB: the sampler
				// must find the parallel ranges up front.
				if c.scan.MaxProbes != 1 && c.scan.Concurrency != 1 && res.Ranges < 8 {
					t.Errorf("export in %d ranges (%d probes); want at least 8", res.Ranges, res.Probes)
				}

				cnt, err := transfer.Count(ctxFor(t), csrc, ptr(withScan(transfer.Options{}, c.scan)))
				if err != nil || !cnt.Complete || cnt.Entities != int64(n) || cnt.Partitions != int64(parts) || cnt.DeleteTransactions != int64(parts) {
					t.Errorf("count %+v, %v; want %d entities, %d partitions, %d delete transactions", cnt, err, n, parts, parts)
				}

				dst := newTable(t, acct)
				_, _, dtbls := behindFront(t, &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Seed: seed, Paging: paging}, &tablekit.Options{Service: tablekit.ServiceCosmosDB}, dst)
				cres, err := transfer.Copy(ctxFor(t), csrc, dtbls[0], transfer.Insert, ptr(withScan(transfer.Options{}, c.scan)))
				if err != nil || !cres.Complete || cres.Written != int64(n) || cres.Failed != 0 {
					t.Errorf("copy: %d read, %d written, %d failed, complete %v; %v", cres.Read, cres.Written, cres.Failed, cres.Complete, err)
				}
				sameEntities(t, keyed(es), readAll(t, dst))
			})
		}
	}
}

// TestCosmosPurge: a purge on Cosmos DB (paged as Azure may) leaves
// nothing in its scope, touches nothing outside it, and counts every
// delete.
func TestCosmosPurge(t *testing.T) {
	acct := testenv.Account(t, nil)
	for _, c := range cosmosScans {
		t.Run(c.name, func(t *testing.T) {
			tbl := newTable(t, acct)
			es := seedMany(t, tbl, 40, 2000)
			keep := []tablekit.Entity{{PartitionKey: "a-before", RowKey: "1"}, {PartitionKey: "z-after", RowKey: "1"}}
			seed(t, tbl, keep)
			_, _, tbls := behindFront(t, &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Paging: true, Seed: 3}, &tablekit.Options{Service: tablekit.ServiceCosmosDB}, tbl)
			res, err := transfer.Purge(ctxFor(t), tbls[0], ptr(withScanP(transfer.PurgeOptions{Options: transfer.Options{Scope: transfer.Scope{From: "p", To: "q"}}}, c.scan)))
			if err != nil || !res.Complete || res.Deleted != int64(len(es)) || res.Listed != int64(len(es)) || res.Gone != 0 || res.Changed != 0 {
				t.Errorf("purge %+v, %v", res, err)
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
		})
	}
}

// TestCosmosCountResumes: a count on Cosmos DB stopped halfway resumes
// with the partial counts of its ranges and ends exact.
func TestCosmosCountResumes(t *testing.T) {
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
	_, _, tbls := behindFront(t, &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Seed: 4},
		&tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{stop}}, Service: tablekit.ServiceCosmosDB}, tbl)
	cp := transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "count.checkpoint"))
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp}, Concurrency: 3, PageSize: 40, Boundaries: []string{"p013", "p027"}}
	res, err := transfer.Count(cctx, tbls[0], &opts)
	if !errors.Is(err, context.Canceled) || res.Complete || res.Entities == 0 || res.Entities >= 2000 {
		t.Fatalf("stopped count: %+v, %v", res, err)
	}
	first := res.Pages
	opts.Resume = true
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
	_, _, tbls := behindFront(t, &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Seed: 5},
		&tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{stop}}, Service: tablekit.ServiceCosmosDB}, tbl)
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
	res, err = transfer.Count(ctx, tbls[0], &opts)
	if err != nil || !res.Complete || res.Entities != 1000 || res.Partitions != 1000 || res.DeleteTransactions != 1000 {
		t.Errorf("resumed count: %+v, %v; want 1000 entities in 1000 partitions", res, err)
	}
}
