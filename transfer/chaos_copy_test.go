package transfer_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/transfer"
)

// chaosModes are the write modes of the import and copy suites.
var chaosModes = []transfer.Mode{transfer.Insert, transfer.Merge, transfer.Replace}

// runsMode says whether a seed runs mode i of chaosModes: every mode at
// full size; at CI size one mode per seed (seed%3), so that CI's seeds 1,
// 2 and 3 run the three modes, each once, and the suites stay short.
func runsMode(seed int64, i int) bool {
	return chaos.Full() || int(seed%3) == i
}

// chaosSource seeds a source table that nobody writes during the run:
// the suites' entities (every EDM type) and everyType's edge values and
// keys. It returns the table's name and its entities.
func chaosSource(t *testing.T, w *chaosWorld, parts, n int) (string, map[key]tablekit.Entity) {
	t.Helper()
	name := w.newTable()
	src := w.direct(name)
	seeded := seedChaos(t, src, parts, n, 0, 0)
	extra := everyType()
	seed(t, src, extra)
	maps.Copy(seeded, keyed(extra))
	return name, seeded
}

// prefill writes into the destination table of a merge or replace run
// other values for every 4th key of the source, and keys of its own; it
// returns what the destination must hold once the import or copy is done.
func prefill(t *testing.T, dst *tablekit.Table[tablekit.Entity], src map[key]tablekit.Entity, mode transfer.Mode) map[key]tablekit.Entity {
	t.Helper()
	want := maps.Clone(src)
	if mode == transfer.Insert {
		return want
	}
	var pre []tablekit.Entity
	i := 0
	for _, k := range sortedKeys(src) {
		if i++; i%4 != 0 {
			continue
		}
		old := chaosValue(k[0], k[1], -2, 1)
		old.Properties["Old"] = "kept by a merge"
		pre = append(pre, old)
		if mode == transfer.Merge {
			merged := tablekit.Entity{PartitionKey: k[0], RowKey: k[1], Properties: maps.Clone(old.Properties)}
			maps.Copy(merged.Properties, src[k].Properties)
			want[k] = merged
		}
	}
	for i := range 10 {
		e := chaosValue(chaosPartition(i), fmt.Sprintf("x%03d", i), -2, 1)
		pre = append(pre, e)
		want[keyOf(&e)] = e
	}
	seed(t, dst, pre)
	return want
}

func sortedKeys(m map[key]tablekit.Entity) []key {
	out := make([]key, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slicesSortKeys(out)
	return out
}

// TestChaosImport: an import of an export (every EDM type and edge value,
// keys with quotes, Unicode and empty keys) in insert, merge and replace
// modes (at CI size one mode per seed: see runsMode), into a table on Table storage or Cosmos DB, with faults in the
// import's requests and its table checkpoint's, killed several times and
// resumed (each time with another batch size and concurrency).
//
// Invariant: the destination ends holding exactly the source's entities
// (every property, every EDM type; in merge mode on top of what was
// there; other entities untouched), and the last run reports every line
// read and written, none failed (a resumed insert finds what the killed
// runs wrote).
func TestChaosImport(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		w := newChaosWorld(t, seed)
		// At CI size a seed imports once (one mode): 60 partitions make
		// enough transactions (an import sends about one per partition:
		// it keeps a partition's entities together across batches) for
		// the seed's fault rate to be measured on more than a handful.
		parts, n := chaos.Size(60, 24), chaos.Size(200, 1500)
		srcName, src := chaosSource(t, w, parts, n)
		file := filepath.Join(t.TempDir(), "source.jsonl")
		var buf bytes.Buffer
		if _, err := transfer.Export(ctxFor(t), w.direct(srcName), &buf, nil); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		for i, mode := range chaosModes {
			if !runsMode(seed, i) {
				continue
			}
			cosmos := (int(seed)+i)%2 == 1
			t.Run(fmt.Sprintf("%s/%s", mode, map[bool]string{false: "storage", true: "cosmos"}[cosmos]), func(t *testing.T) {
				w.t = t
				ctx := ctxFor(t)
				name := w.newTable()
				want := prefill(t, w.direct(name), src, mode)
				k := &killer{}
				acct := w.account(cosmos, nil, k)
				dst := chaosTable(t, acct, name)
				cps := w.checkpoints((int(seed)+i)%3 == 0, acct, "import")
				r := w.runs(k, cps, chaos.Size(2, 6), len(src)*10, 10+uint64(i))
				r.pageSizes = []int{37, 150, 1000} // the batch sizes
				var last transfer.ImportResult
				runs := r.do(ctx, func(ctx context.Context, cp transfer.Checkpoint, scan scanOpts, resume bool) (bool, error) {
					f, err := os.Open(file)
					if err != nil {
						return false, err
					}
					defer f.Close()
					res, err := transfer.Import(ctx, dst, f, mode, &transfer.ImportOptions{JobOptions: transfer.JobOptions{Checkpoint: cp, CheckpointEvery: 20 * time.Millisecond, Resume: resume}, BatchSize: scan.PageSize, Concurrency: scan.Concurrency})
					last = res
					return res.Complete, err
				})
				t.Logf("%s: %d runs, %d killed %v; result: %d read, %d written (%d verified), %d failed, %d skipped",
					cps, runs, r.fired, r.log, last.Read, last.Written, last.Verified, last.Failed, last.Skipped)
				summary(t, "import", mode, "runs", runs, "kills", r.fired, "entities", len(src), "verified", last.Verified)
				var v chaos.Violations
				if n := int64(len(src)); last.Read != n || last.Written != n || last.Failed != 0 || !last.Complete {
					v.Addf("the last run reports %d read, %d written, %d failed, complete %v; want %d read and written, none failed (failures: %v)",
						last.Read, last.Written, last.Failed, last.Complete, n, last.Failures)
				}
				sameTable(&v, "destination", want, readAll(t, w.direct(name)))
				v.Report(t)
			})
		}
		w.t = t
		w.checkFaultRate()
	})
}

// TestChaosCopy: a copy of a table in insert, merge and replace modes
// (at CI size one mode per seed: see runsMode), from and to Table storage and Cosmos DB (by mode and seed), with faults
// in the copy's requests (source and destination) and its table
// checkpoint's, killed several times and resumed (each time with another
// page size and concurrency).
//
// Invariant: the destination ends holding exactly the source's entities
// (every property, every EDM type; in merge mode on top of what was
// there; other entities untouched), and the last run reports every
// entity read and written, none failed (a resumed insert copy finds what
// the killed runs wrote).
//
// Then an insert copy from Cosmos DB while 8 writers delete entities of
// the source and insert new ones, killed and resumed: a resumed insert
// copy relies on the pages after a token coming back the same, which
// writers change. Invariant: none fails and every entity read is written
// (the resumed runs find what they had written), every entity nobody
// wrote is in the destination as in the source, and every other entity
// there is one the source held.
func TestChaosCopy(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		w := newChaosWorld(t, seed)
		parts, n := chaos.Size(8, 24), chaos.Size(200, 1500)
		srcName, src := chaosSource(t, w, parts, n)
		for i, mode := range chaosModes {
			if !runsMode(seed, i) {
				continue
			}
			srcCosmos, dstCosmos := (int(seed)+i)%2 == 1, (int(seed)+i)%3 == 1
			name := fmt.Sprintf("%s/%s-to-%s", mode, map[bool]string{false: "storage", true: "cosmos"}[srcCosmos], map[bool]string{false: "storage", true: "cosmos"}[dstCosmos])
			t.Run(name, func(t *testing.T) {
				w.t = t
				ctx := ctxFor(t)
				dstName := w.newTable()
				want := prefill(t, w.direct(dstName), src, mode)
				k := &killer{}
				sacct := w.account(srcCosmos, nil, k)
				dacct := sacct
				if dstCosmos != srcCosmos {
					dacct = w.account(dstCosmos, nil, k)
				}
				from, to := chaosTable(t, sacct, srcName), chaosTable(t, dacct, dstName)
				cps := w.checkpoints((int(seed)+i)%3 == 0, sacct, "copy")
				r := w.runs(k, cps, chaos.Size(2, 6), len(src), 20+uint64(i))
				if srcCosmos {
					r.pageSizes = []int{100, 250, 1000}
				}
				var last transfer.CopyResult
				runs := r.do(ctx, func(ctx context.Context, cp transfer.Checkpoint, scan scanOpts, resume bool) (bool, error) {
					res, err := transfer.Copy(ctx, from, to, mode, ptr(withScan(transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp, CheckpointEvery: 20 * time.Millisecond, Resume: resume}}, scan)))
					last = res
					return res.Complete, err
				})
				t.Logf("%s: %d runs, %d killed %v; result: %d read, %d written (%d verified), %d failed",
					cps, runs, r.fired, r.log, last.Read, last.Written, last.Verified, last.Failed)
				summary(t, "copy", mode, "runs", runs, "kills", r.fired, "entities", len(src), "verified", last.Verified)
				var v chaos.Violations
				if n := int64(len(src)); last.Read != n || last.Written != n || last.Failed != 0 || !last.Complete {
					v.Addf("the last run reports %d read, %d written, %d failed, complete %v; want %d read and written, none failed (failures: %v)",
						last.Read, last.Written, last.Failed, last.Complete, n, last.Failures)
				}
				sameTable(&v, "destination", want, readAll(t, w.direct(dstName)))
				v.Report(t)
			})
		}
		t.Run("insert/cosmos-with-writers", func(t *testing.T) {
			w.t = t
			chaosCopyWithWriters(t, w)
		})
		w.t = t
		w.checkFaultRate()
	})
}

func chaosCopyWithWriters(t *testing.T, w *chaosWorld) {
	ctx := ctxFor(t)
	parts, stable, writers, perWriter := chaos.Size(8, 24), chaos.Size(150, 1200), chaos.Size(8, 16), chaos.Size(8, 30)
	srcName := w.newTable()
	seeded := seedChaos(t, w.direct(srcName), parts, stable, writers, perWriter)
	dstName := w.newTable()
	k := &killer{}
	acct := w.account(true, nil, k)
	from, to := chaosTable(t, acct, srcName), chaosTable(t, acct, dstName)
	cps := w.checkpoints(w.seed%2 == 0, acct, "copy")

	stop := make(chan struct{})
	var h *chaos.History
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Deletes of seeded entities and inserts of new keys only: an
		// entity the source changes after a killed run copied it would
		// rightly be a conflict for the resumed insert copy.
		h, werr = w.chaosWriters(ctx, srcName, true, writers, parts, perWriter,
			writerMix{del: 1, insert: 1, newKeys: 1 << 20}, 5, stop)
	}()
	r := w.runs(k, cps, chaos.Size(2, 6), len(seeded), 30)
	r.pageSizes = []int{100, 250, 1000}
	var last transfer.CopyResult
	runs := r.do(ctx, func(ctx context.Context, cp transfer.Checkpoint, scan scanOpts, resume bool) (bool, error) {
		res, err := transfer.Copy(ctx, from, to, transfer.Insert, ptr(withScan(transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp, CheckpointEvery: 20 * time.Millisecond, Resume: resume}}, scan)))
		last = res
		return res.Complete, err
	})
	close(stop)
	<-done
	if werr != nil {
		t.Fatal(werr)
	}
	t.Logf("%s: %d runs, %d killed %v; writers: %v; result: %d read, %d written (%d verified), %d failed",
		cps, runs, r.fired, r.log, h, last.Read, last.Written, last.Verified, last.Failed)
	var v chaos.Violations
	if last.Read != last.Written || last.Failed != 0 || !last.Complete {
		v.Addf("the last run reports %d read, %d written, %d failed, complete %v; want as many written as read, none failed (failures: %v)",
			last.Read, last.Written, last.Failed, last.Complete, last.Failures)
	}
	written := writtenValues(h)
	got := readAll(t, w.direct(dstName))
	for k, e := range got {
		_, isSeeded := seeded[k]
		if _, isWritten := written[k]; !isSeeded && !isWritten {
			v.Addf("%q/%q is in the destination but never existed", k[0], k[1])
			continue
		}
		if d := checkWritten(&e, seeded, written); d != "" {
			v.Addf("%q/%q holds a value the source never had: %s", k[0], k[1], d)
		}
	}
	for k, s := range seeded {
		if !isStable(k) {
			continue
		}
		if e, ok := got[k]; !ok {
			v.Addf("%q/%q, which nobody wrote, was not copied", k[0], k[1])
		} else if d := diffProps(s.Properties, e.Properties); d != "" {
			v.Addf("%q/%q, which nobody wrote, differs: %s", k[0], k[1], d)
		}
	}
	t.Logf("destination: %d entities", len(got))
	summary(t, append([]any{"copy", "insert-with-writers", "runs", runs, "kills", r.fired, "read", last.Read, "verified", last.Verified}, historySummary(h)...)...)
	v.Report(t)
}
