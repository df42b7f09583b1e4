package transfer_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/transfer"
)

// TestChaosExport: an export of a table that at least 8 writers change
// meanwhile (upserts, merges, deletes, inserts of new keys, each writer
// with its own Account and keys), with faults in the export's requests,
// the writers' and the table checkpoint's, killed several times and
// resumed (each time with another page size and concurrency), on Table
// storage and on Cosmos DB (lines in no key order there: compared as
// sets), both paged as Azure may.
//
// Invariant, on the file the last run completes:
//   - it reads back whole: header, entity lines, trailer;
//   - every entity that existed unchanged for the whole export (the
//     seeded entities no writer owns) is in it exactly once, with every
//     property and EDM type as stored;
//   - no key is in it twice;
//   - every other line is a value its key held at some time: the seed
//     value, or one a writer wrote (a merge's properties on top);
//   - the trailer's count, and the result's, is the number of lines.
func TestChaosExport(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		w := newChaosWorld(t, seed)
		for i, cosmos := range []bool{false, true} {
			t.Run(map[bool]string{false: "storage", true: "cosmos"}[cosmos], func(t *testing.T) {
				w.t = t
				chaosExport(t, w, cosmos, (int(seed)+i)%2 == 1)
			})
		}
		w.t = t
		w.checkFaultRate()
	})
}

func chaosExport(t *testing.T, w *chaosWorld, cosmos, tableCheckpoint bool) {
	ctx := ctxFor(t)
	parts, stable, writers, perWriter := chaos.Size(8, 24), chaos.Size(150, 1200), chaos.Size(8, 16), chaos.Size(8, 30)
	kills := chaos.Size(2, 6)
	name := w.newTable()
	seeded := seedChaos(t, w.direct(name), parts, stable, writers, perWriter)
	k := &killer{}
	acct := w.account(cosmos, nil, k)
	src := chaosTable(t, acct, name)
	cps := w.checkpoints(tableCheckpoint, acct, "export")

	stop := make(chan struct{})
	var h *chaos.History
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		h, werr = w.chaosWriters(ctx, name, cosmos, writers, parts, perWriter,
			writerMix{upsert: 4, merge: 2, del: 2, insert: 2, newKeys: 20}, 5, stop)
	}()

	path := filepath.Join(t.TempDir(), "export.jsonl")
	var last transfer.ExportResult
	r := w.runs(k, cps, kills, len(seeded), map[bool]uint64{false: 1, true: 2}[cosmos])
	if cosmos {
		// Each page on Cosmos mode reads the whole table from Azurite.
		r.pageSizes = []int{100, 250, 1000}
	}
	n := r.do(ctx, func(ctx context.Context, cp transfer.Checkpoint, scan scanOpts, resume bool) (bool, error) {
		f, err := openExport(ctx, path, cp, resume)
		if err != nil {
			return false, err
		}
		defer f.Close()
		res, err := transfer.Export(ctx, src, f, ptr(withScan(transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp, CheckpointEvery: 20 * time.Millisecond, Resume: resume}}, scan)))
		last = res
		return res.Complete, err
	})
	close(stop)
	<-done
	if werr != nil {
		t.Fatal(werr)
	}
	written := writtenValues(h)
	t.Logf("%s, %s: %d runs, %d killed (%v); writers: %v; result %+v", map[bool]string{false: "storage", true: "cosmos"}[cosmos], cps, n, r.fired, r.log, h, last)

	var v chaos.Violations
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := transfer.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[key]int{}
	lines := int64(0)
	trailer := false // the Reader checks that the trailer counts the lines
	for {
		e, err := rd.Next()
		if err == io.EOF {
			trailer = true
			break
		}
		if err != nil {
			v.Addf("reading the export: %v", err)
			break
		}
		lines++
		k := keyOf(&e)
		seen[k]++
		if seen[k] == 2 {
			v.Addf("%q/%q is in the export twice", k[0], k[1])
		}
		_, isSeeded := seeded[k]
		_, isWritten := written[k]
		switch {
		case !isSeeded && !isWritten:
			v.Addf("%q/%q is in the export but never existed", k[0], k[1])
		case isSeeded && !isWritten && isStable(k):
			if d := diffProps(seeded[k].Properties, e.Properties); d != "" {
				v.Addf("%q/%q, never written during the export, differs: %s", k[0], k[1], d)
			}
		default:
			if d := checkWritten(&e, seeded, written); d != "" {
				v.Addf("%q/%q holds a value it never had: %s", k[0], k[1], d)
			}
		}
	}
	if !trailer {
		v.Addf("the export ends without its trailer (%d entities read)", lines)
	}
	if last.Entities != lines || !last.Complete {
		v.Addf("result %+v, want %d entities, complete", last, lines)
	}
	stableCount := 0
	for k := range seeded {
		if isStable(k) {
			stableCount++
			if seen[k] != 1 {
				v.Addf("%q/%q existed unchanged for the whole export and is in it %d times", k[0], k[1], seen[k])
			}
		}
	}
	t.Logf("%d lines: %d stable entities, %d others", lines, stableCount, lines-int64(stableCount))
	summary(t, append([]any{"export", map[bool]string{false: "storage", true: "cosmos"}[cosmos], "runs", n, "kills", r.fired, "lines", lines, "stable", stableCount}, historySummary(h)...)...)
	v.Report(t)
}

// isStable reports whether k is a seeded key no writer owns.
func isStable(k key) bool { return len(k[1]) > 0 && k[1][0] == 's' }

// openExport opens the export file of a run: created, or for a resumed run
// cut at the size its checkpoint recorded (as the tablekit command does).
func openExport(ctx context.Context, path string, cp transfer.Checkpoint, resume bool) (*os.File, error) {
	if !resume {
		return os.Create(path)
	}
	off, ok, err := transfer.ExportResumeOffset(ctx, cp)
	if err != nil {
		return nil, err
	}
	if !ok {
		return os.Create(path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
