package transfer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
)

// JobOptions are what every operation has: where it saves its state, so
// that a later call can resume it, and how it reports progress.
type JobOptions struct {
	// Checkpoint, when set, is where the job's state is saved every
	// CheckpointEvery and when the call returns, so that a call with
	// Resume can go on from there.
	Checkpoint Checkpoint
	// CheckpointEvery is the time between checkpoints (default 5 s).
	CheckpointEvery time.Duration
	// Resume continues the job saved in Checkpoint (which must belong to
	// the same operation, table and scope; Scope.OlderThan is measured
	// from the start of the job's first run). With nothing saved yet, the
	// job starts from the beginning. Without Resume a job starts from the
	// beginning and overwrites the checkpoint.
	Resume bool
	// OnProgress, when set, is called every second and once at the end
	// (with Done set), never concurrently.
	OnProgress func(Progress)
}

// Options configures [Export], [Copy] and [Count], and how [Purge] reads
// (in [PurgeOptions]): which entities, and how the scope is split into
// PartitionKey ranges read in parallel (see "Splitting" in the package
// documentation). A nil *Options means defaults: the whole table.
type Options struct {
	JobOptions
	// Scope selects the entities (the zero Scope: the whole table).
	Scope Scope
	// Concurrency is how many ranges are read at once (default 16; at
	// most 1,024). 1 reads the ranges one after the other, in key order of
	// their bounds.
	Concurrency int
	// PageSize is the most entities read per request (1–1000; default
	// 1000).
	PageSize int
	// MaxProbes bounds the keys-only probe queries that sample the key
	// space into ranges before reading, and later split running ranges
	// (default 4 × Concurrency; the default of [Count] and [Purge] is
	// none, see there; at most 1,000,000). A negative value turns both
	// off: the scope is read as one range.
	MaxProbes int
	// Boundaries, when set, splits the scope at these PartitionKeys (in
	// any order; keys outside the scope are ignored): range i is
	// [Boundaries[i-1], Boundaries[i]). No probes are sent and ranges are
	// not split further.
	Boundaries []string
}

// scan returns the options' scanOptions.
func (o *Options) scan() *scanOptions {
	return &scanOptions{Concurrency: o.Concurrency, Boundaries: o.Boundaries, MaxProbes: o.MaxProbes, PageSize: o.PageSize}
}

func (o *Options) config(op string, t *tablekit.Table[tablekit.Entity], sel []string) jobConfig {
	return jobConfig{
		op: op, t: t, scope: o.Scope, scan: o.scan(), sel: sel,
		checkpoint: o.Checkpoint, every: o.CheckpointEvery, resume: o.Resume,
	}
}

// ExportResult reports an export.
type ExportResult struct {
	// Entities is the number of entity lines written, over all runs.
	Entities int64
	// Bytes is the size of the export so far, over all runs.
	Bytes int64
	// Ranges is the number of PartitionKey ranges the scope was read in.
	Ranges int
	// Probes is the number of key-sampling requests sent to plan them.
	Probes int64
	// Transactions is the storage transactions of this run (see
	// [Progress].Transactions).
	Transactions int64
	// Complete is true when the export is whole: every range read and the
	// trailer written.
	Complete bool
	// Elapsed is the time this run took.
	Elapsed time.Duration
}

// Export writes the entities of t in opts.Scope to w in the export format
// (see the package documentation): a header line, one line per entity, and
// a trailer line once everything is written. Ranges are read in parallel;
// each page of a range is written with one call to w, so lines of one range
// are in the service's order (key order on Table storage, none on Cosmos
// DB) and pages of different ranges interleave.
//
// With a Checkpoint, the state (each range's continuation token and the
// number of bytes written) is saved every CheckpointEvery; before each
// save, w is flushed if it has a Flush() error method and synced if it has
// a Sync() error method (an *os.File). To resume, position w at
// [ExportResumeOffset] (truncate the file there: later bytes are
// duplicates) and call Export with Resume.
//
// When ctx ends, Export stops, saves its checkpoint and returns the
// context's error with Complete false.
func Export(ctx context.Context, t *tablekit.Table[tablekit.Entity], w io.Writer, opts *Options) (ExportResult, error) {
	const op = "transfer.Export"
	if opts == nil {
		opts = &Options{}
	}
	if w == nil {
		return ExportResult{}, validation(op, "nil io.Writer")
	}
	j, err := newJob(ctx, opts.config("export", t, nil))
	if err != nil {
		return ExportResult{}, err
	}
	if j.state.Offset == 0 {
		h := appendHeader(nil, Header{Version: formatVersion, Table: t.Name(), Filter: j.state.Scope, Created: time.Now()})
		if _, err := w.Write(h); err != nil {
			return ExportResult{}, fmt.Errorf("transfer: Export: write header: %w", err)
		}
		j.state.Offset = int64(len(h))
	}
	j.beforeSave = func() error { return flushWriter(w) }
	rep := startReporter(ctx, opts.OnProgress, func() Progress { return j.progress(false) })
	bufs := sync.Pool{New: func() any { return new([]byte) }}
	err = j.run(ctx, nil, func(ctx context.Context, r *rangeState, _ string, page tablekit.Page[tablekit.Entity]) error {
		bp := bufs.Get().(*[]byte)
		defer bufs.Put(bp)
		buf := (*bp)[:0]
		for i := range page.Items {
			var err error
			if buf, err = AppendEntity(buf, &page.Items[i]); err != nil {
				return err
			}
		}
		*bp = buf
		j.mu.Lock()
		defer j.mu.Unlock()
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("transfer: Export: write: %w", err)
		}
		j.state.Offset += int64(len(buf))
		n := int64(len(page.Items))
		r.Token, r.Done, r.Read = page.Continuation, page.Continuation == "", r.Read+n
		j.state.Counts.Read += n
		j.state.Counts.Written += n
		return nil
	})
	if err == nil && j.complete() {
		err = j.finishExport(ctx, w)
	}
	rep.finish()
	j.mu.Lock()
	res := ExportResult{
		Entities: j.state.Counts.Written, Bytes: j.state.Offset, Ranges: len(j.state.Ranges),
		Probes: j.state.Probes, Complete: j.state.Complete && j.state.Trailer, Elapsed: time.Since(j.started),
	}
	j.mu.Unlock()
	res.Transactions = j.transactions()
	return res, err
}

// finishExport writes the trailer (once) and saves the final checkpoint.
func (j *job) finishExport(ctx context.Context, w io.Writer) error {
	j.mu.Lock()
	if j.state.Trailer {
		j.mu.Unlock()
		return nil
	}
	tr := appendTrailer(nil, trailer{Entities: j.state.Counts.Written})
	if _, err := w.Write(tr); err != nil {
		j.mu.Unlock()
		return fmt.Errorf("transfer: Export: write trailer: %w", err)
	}
	j.state.Offset += int64(len(tr))
	j.state.Trailer = true
	j.mu.Unlock()
	if j.cp != nil {
		return j.save(context.WithoutCancel(ctx))
	}
	return flushWriter(w)
}

// flushWriter flushes and syncs w when it can.
func flushWriter(w io.Writer) error {
	if f, ok := w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("transfer: Export: flush: %w", err)
		}
	}
	if s, ok := w.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return fmt.Errorf("transfer: Export: sync: %w", err)
		}
	}
	return nil
}

// ExportResumeOffset returns the size the output of the export saved in cp
// had at its last checkpoint, and whether cp holds an export. Truncate the
// output to that size (bytes after it may be partial or duplicated) and
// call Export with Resume to go on.
func ExportResumeOffset(ctx context.Context, cp Checkpoint) (int64, bool, error) {
	if cp == nil {
		return 0, false, validation("transfer.ExportResumeOffset", "nil Checkpoint")
	}
	data, err := cp.Load(ctx)
	if err != nil || data == nil {
		return 0, false, err
	}
	var s jobState
	if err := json.Unmarshal(data, &s); err != nil {
		return 0, false, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	if s.Op != "export" {
		return 0, false, fmt.Errorf("%w: it is the checkpoint of a %s, not an export", ErrCorruptCheckpoint, s.Op)
	}
	return s.Offset, true, nil
}
