package transfer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// exportKeys exports tbl with opts and returns how often each key appears.
func exportKeys(t *testing.T, tbl *tablekit.Table[tablekit.Entity], opts *transfer.Options) (map[[2]string]int, transfer.ExportResult) {
	t.Helper()
	var buf bytes.Buffer
	res, err := transfer.Export(ctxFor(t), tbl, &buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	return readKeys(t, &buf), res
}

func readKeys(t *testing.T, r io.Reader) map[[2]string]int {
	t.Helper()
	rd, err := transfer.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]string]int{}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return seen
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[[2]string{e.PartitionKey, e.RowKey}]++
	}
}

// TestSplitCoversEverything: whatever the shape of the keys, the sampled
// ranges cover every entity exactly once, and keys with structure are
// split into several ranges.
func TestSplitCoversEverything(t *testing.T) {
	acct := testenv.Account(t, nil)
	shapes := map[string]func(i int) string{
		"prefix+number": func(i int) string { return fmt.Sprintf("tenant-%03d", i) },
		"hex":           func(i int) string { h := sha256.Sum256([]byte{byte(i)}); return hex.EncodeToString(h[:8]) },
		"words": func(i int) string {
			return []string{"Alpha", "beta", "Gamma", "delta", "épsilon", "日本", "🎉x", "0zero"}[i%8] + fmt.Sprint(i)
		},
		"one": func(int) string { return "only" },
	}
	for name, pk := range shapes {
		t.Run(name, func(t *testing.T) {
			tbl := newTable(t, acct)
			var es []tablekit.Entity
			for i := range 40 {
				for r := range 5 {
					es = append(es, tablekit.Entity{PartitionKey: pk(i), RowKey: fmt.Sprint(r)})
				}
			}
			seed(t, tbl, es)
			want := keyed(es)
			seen, res := exportKeys(t, tbl, &transfer.Options{Concurrency: 4, MaxProbes: 64})
			for k := range want {
				if seen[k] != 1 {
					t.Errorf("%q/%q exported %d times", k[0], k[1], seen[k])
				}
			}
			if len(seen) != len(want) {
				t.Errorf("%d keys exported, want %d", len(seen), len(want))
			}
			if name != "one" && res.Ranges < 4 {
				t.Errorf("%d ranges, want at least 4 (probes: %d)", res.Ranges, res.Probes)
			}
			t.Logf("%s: %d ranges, %d probes", name, res.Ranges, res.Probes)
			if name == "one" {
				return
			}
			// Boundaries from the caller, and a key range of the scope.
			seen, res = exportKeys(t, tbl, &transfer.Options{Scope: transfer.Scope{From: pk(10), To: pk(20)}, Boundaries: []string{pk(15), pk(12), "~~~", pk(12)}})
			if res.Probes != 0 || len(seen) != countIn(want, pk(10), pk(20)) {
				t.Errorf("bounded export: %d keys (want %d), %d probes, %d ranges", len(seen), countIn(want, pk(10), pk(20)), res.Probes, res.Ranges)
			}
		})
	}
}

// TestSplitWhileRunning: readers with nothing left to start split running
// ranges; every entity is still read exactly once, also by a purge and a
// count.
func TestSplitWhileRunning(t *testing.T) {
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	es := seedMany(t, tbl, 40, 2000)
	// One initial range (the sampler may probe once), small pages: the
	// other readers must split it to have work.
	scan := scanOpts{Concurrency: 6, MaxProbes: 1, PageSize: 20}
	seen, res := exportKeys(t, tbl, ptr(withScan(transfer.Options{}, scan)))
	for _, e := range es {
		if n := seen[[2]string{e.PartitionKey, e.RowKey}]; n != 1 {
			t.Errorf("%s/%s exported %d times", e.PartitionKey, e.RowKey, n)
		}
	}
	switch {
	case len(seen) != len(es):
		t.Errorf("%d keys exported, want %d", len(seen), len(es))
	case onCosmos() && res.Ranges != 1:
		// Running ranges are never split on Cosmos DB.
		t.Errorf("%d ranges on Cosmos DB (%d probes); want the one planned", res.Ranges, res.Probes)
	case !onCosmos() && res.Ranges < 3:
		t.Errorf("%d keys in %d ranges (%d probes); want %d keys in at least 3 ranges", len(seen), res.Ranges, res.Probes, len(es))
	}
	t.Logf("export: %d ranges, %d probes", res.Ranges, res.Probes)
	c, err := transfer.Count(ctxFor(t), tbl, ptr(withScan(transfer.Options{}, scan)))
	if err != nil || c.Entities != 2000 || c.Partitions != 40 || c.DeleteTransactions != 40 {
		t.Errorf("count %+v, %v", c, err)
	}
	p, err := transfer.Purge(ctxFor(t), tbl, ptr(withScanP(transfer.PurgeOptions{}, scan)))
	// 40 transactions, one per partition; on Cosmos DB each page's deletes
	// are grouped by partition: at most one transaction per entity of a
	// page of 20.
	if err != nil || !p.Complete || p.Deleted != 2000 || (p.DeleteTransactions != 40 && !onCosmos()) || p.DeleteTransactions > 20*p.Pages {
		t.Errorf("purge %+v, %v", p, err)
	}
	if left := readAll(t, tbl); len(left) != 0 {
		t.Errorf("%d entities left", len(left))
	}
}

// countIn counts the keys with lo <= PartitionKey < hi in service order.
func countIn(m map[[2]string]tablekit.Entity, lo, hi string) int {
	if compareUTF16(lo, hi) >= 0 {
		return 0
	}
	n := 0
	for k := range m {
		if compareUTF16(k[0], lo) >= 0 && compareUTF16(k[0], hi) < 0 {
			n++
		}
	}
	return n
}

func compareUTF16(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	enc := func(rs []rune) []uint16 {
		var out []uint16
		for _, r := range rs {
			if r >= 0x10000 {
				r -= 0x10000
				out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
			} else {
				out = append(out, uint16(r))
			}
		}
		return out
	}
	ua, ub := enc(ra), enc(rb)
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

// TestExportResumes: an export stopped halfway resumes from its checkpoint
// into the same file, truncated where the checkpoint says; the result has
// every entity once and its trailer.
func TestExportResumes(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	es := seedMany(t, tbl, 8, 1600)
	path := filepath.Join(t.TempDir(), "out.jsonl")
	cp := transfer.NewFileCheckpoint(path + ".checkpoint")
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp}, PageSize: 50, Concurrency: 3, Boundaries: []string{"p002", "p005"}}

	// Stop after 10 pages.
	cctx, cancel := context.WithCancel(ctx)
	var pages atomic.Int32
	stopper, err := tablekit.Open(testenv.ConnectionString(t), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(r *policy.Request) (*http.Response, error) {
		if r.Raw().Method == http.MethodGet && pages.Add(1) == 10 {
			cancel()
		}
		return r.Next()
	})}}})
	if err != nil {
		t.Fatal(err)
	}
	tbl2, err := tablekit.OpenTable[tablekit.Entity](stopper, tbl.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := transfer.Export(cctx, tbl2, f, &opts)
	f.Close()
	if !errors.Is(err, context.Canceled) || res.Complete || res.Entities == 0 {
		t.Fatalf("stopped export: %+v, %v", res, err)
	}
	// Some bytes after the checkpoint, as a crash leaves them.
	f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"PartitionKey":"half a li`)
	f.Close()

	off, ok, err := transfer.ExportResumeOffset(ctx, cp)
	if err != nil || !ok || off != res.Bytes {
		t.Fatalf("resume offset %d, %v, %v; want %d", off, ok, err, res.Bytes)
	}
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(off); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	opts.Resume = true
	res, err = transfer.Export(ctx, tbl, f, &opts)
	f.Close()
	if err != nil || !res.Complete || res.Entities != int64(len(es)) {
		t.Fatalf("resumed export: %+v, %v", res, err)
	}
	f, _ = os.Open(path)
	defer f.Close()
	seen := readKeys(t, f)
	for _, e := range es {
		if seen[[2]string{e.PartitionKey, e.RowKey}] != 1 {
			t.Errorf("%s/%s appears %d times", e.PartitionKey, e.RowKey, seen[[2]string{e.PartitionKey, e.RowKey}])
		}
	}
	// Another scope cannot resume this checkpoint.
	o := opts
	o.Scope = transfer.Scope{From: "p003"}
	if _, err := transfer.Export(ctx, tbl, io.Discard, &o); !errors.Is(err, transfer.ErrCorruptCheckpoint) {
		t.Errorf("resume with another scope: %v, want ErrCorruptCheckpoint", err)
	}
}

// TestTableCheckpoint: the state round-trips through an entity (also when
// larger than one property), and a second writer is detected.
func TestTableCheckpoint(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	cp, err := transfer.NewTableCheckpoint(tbl, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cp.Load(ctx); err != nil || got != nil {
		t.Fatalf("load of nothing: %q, %v", got, err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // 160 KB: 3 properties
	if err := cp.Save(ctx, big); err != nil {
		t.Fatal(err)
	}
	if err := cp.Save(ctx, big[:100]); err != nil {
		t.Fatal(err)
	}
	other, _ := transfer.NewTableCheckpoint(tbl, "job-1")
	if got, err := other.Load(ctx); err != nil || !bytes.Equal(got, big[:100]) {
		t.Fatalf("load: %d bytes, %v", len(got), err)
	}
	if err := other.Save(ctx, big); err != nil {
		t.Fatal(err)
	}
	if got, _ := cp.Load(ctx); !bytes.Equal(got, big) {
		t.Fatalf("load of the big state: %d bytes", len(got))
	}
	// cp loaded the latest; other's next save is now stale.
	if err := cp.Save(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := other.Save(ctx, []byte("y")); !errors.Is(err, transfer.ErrCheckpointConflict) {
		t.Errorf("stale save: %v, want ErrCheckpointConflict", err)
	}
	if err := cp.Save(ctx, bytes.Repeat([]byte{1}, 2<<20)); !errors.Is(err, tablekit.ErrTooLarge) {
		t.Errorf("2 MiB state: %v, want ErrTooLarge", err)
	}
	if _, err := transfer.NewTableCheckpoint(tbl, "a/b"); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("bad job name: %v", err)
	}

	// A purge checkpointed in a table resumes from it.
	data := newTable(t, acct)
	seedMany(t, data, 3, 600)
	pcp, _ := transfer.NewTableCheckpoint(tbl, "purge-"+data.Name())
	opts := transfer.PurgeOptions{Options: transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: pcp}, PageSize: 100}, Budget: 1}
	if res, err := transfer.Purge(ctx, data, &opts); err != nil || res.Complete {
		t.Fatalf("budgeted purge %+v, %v", res, err)
	}
	opts.Budget, opts.Resume = 0, true
	pcp2, _ := transfer.NewTableCheckpoint(tbl, "purge-"+data.Name())
	opts.Checkpoint = pcp2
	if res, err := transfer.Purge(ctx, data, &opts); err != nil || !res.Complete {
		t.Fatalf("resumed purge %+v, %v", res, err)
	}
	if left := readAll(t, data); len(left) != 0 {
		t.Errorf("%d entities left", len(left))
	}
}

// TestFileCheckpoint: load of a missing file is no state; saves replace
// the file whole and leave no temporary files.
func TestFileCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cp := transfer.NewFileCheckpoint(filepath.Join(dir, "cp.json"))
	if got, err := cp.Load(ctx); err != nil || got != nil {
		t.Fatalf("missing file: %q, %v", got, err)
	}
	for _, s := range []string{"first, longer state", "second"} {
		if err := cp.Save(ctx, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if got, err := cp.Load(ctx); err != nil || string(got) != s {
			t.Fatalf("load %q, %v; want %q", got, err, s)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the folder, want 1", len(ents))
	}
	bad := transfer.NewFileCheckpoint(filepath.Join(dir, "missing", "cp.json"))
	if err := bad.Save(ctx, []byte("x")); err == nil {
		t.Error("save into a missing folder succeeded")
	}
}

// TestTableCheckpointLostAnswer: a save whose answer is lost (the SDK's
// retry of the conditional update meets the new ETag: "outcome unknown")
// succeeds, since the save can tell its own write; the next save is not
// mistaken for another run's conflict; a real conflict is still one. A
// job whose checkpoint saves lose answers finishes (it used to stop at
// the first).
func TestTableCheckpointLostAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  chaos.Config
	}{
		{"first answer lost", chaos.Config{AnswerLost: 1, MaxConsecutive: 1}},
		{"timeout after applying", chaos.Config{TimeoutAfter: 1, MaxConsecutive: 1}},
		{"every answer lost", chaos.Config{AnswerLost: 1, MaxConsecutive: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			cfg := tc.cfg
			cfg.Services, cfg.Operations = []string{"table"}, []string{"UpdateEntity"}
			inj, err := chaos.New(1, &cfg)
			if err != nil {
				t.Fatal(err)
			}
			acct := inj.Account(t, nil)
			inj.SetEnabled(false)
			jobs := newTable(t, acct)
			cp, _ := transfer.NewTableCheckpoint(jobs, "job")
			if err := cp.Save(ctx, []byte("one")); err != nil {
				t.Fatal(err)
			}
			stale, _ := transfer.NewTableCheckpoint(jobs, "job")
			if _, err := stale.Load(ctx); err != nil {
				t.Fatal(err)
			}
			inj.SetEnabled(true)
			for _, state := range []string{"two", "three"} {
				if err := cp.Save(ctx, []byte(state)); err != nil {
					t.Fatalf("save %q: %v", state, err)
				}
			}
			if err := stale.Save(ctx, []byte("other run")); !errors.Is(err, transfer.ErrCheckpointConflict) {
				t.Errorf("save of a stale run: %v, want ErrCheckpointConflict", err)
			}
			inj.SetEnabled(false)
			if inj.Stats().Faults() == 0 {
				t.Fatal("no answer was lost: the test tested nothing")
			}
			other, _ := transfer.NewTableCheckpoint(jobs, "job")
			if got, err := other.Load(ctx); err != nil || string(got) != "three" {
				t.Fatalf("load: %q, %v; want the last save", got, err)
			}

			// A job checkpointed every few pages.
			data := newTable(t, acct)
			seedMany(t, data, 4, 800)
			jcp, _ := transfer.NewTableCheckpoint(jobs, "count")
			inj.SetEnabled(true)
			res, err := transfer.Count(ctx, data, &transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: jcp, CheckpointEvery: 5 * time.Millisecond}, PageSize: 20, Concurrency: 2, Boundaries: []string{"p002"}})
			inj.SetEnabled(false)
			t.Logf("count %+v; %v", res, inj.Stats())
			if err != nil || !res.Complete || res.Entities != 800 {
				t.Fatalf("count with lost checkpoint answers: %+v, %v", res, err)
			}
		})
	}
}
