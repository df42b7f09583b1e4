package transfer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/transfer"
)

// exportStream returns es as an export, in the order given, with a header
// created at created.
func exportStream(t testing.TB, es []tablekit.Entity, created time.Time) []byte {
	t.Helper()
	buf := fmt.Appendf(nil, `{"tablekit":"export","version":1,"table":"src","created":%q}`+"\n", created.UTC().Format(time.RFC3339Nano))
	for i := range es {
		var err error
		if buf, err = transfer.AppendEntity(buf, &es[i]); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Appendf(buf, `{"tablekit":"end","entities":%d}`+"\n", len(es))
}

// manyEntities returns n entities over parts partitions, the partitions
// interleaved line by line (as a file not sorted by key has them).
func manyEntities(parts, n int) []tablekit.Entity {
	es := make([]tablekit.Entity, n)
	for i := range es {
		es[i] = tablekit.Entity{PartitionKey: fmt.Sprintf("p%03d", i%parts), RowKey: fmt.Sprintf("r%06d", i),
			Properties: map[string]any{"N": int64(i), "Name": "entity", "Score": float64(i) / 7, "Whole": 2.0, "At": time.Unix(int64(i), 100).UTC()}}
	}
	return es
}

var errCrash = errors.New("test: the process crashed")

// crashingCheckpoint keeps saves until one records at least after entities
// written; the first later save that records more written "crashes the
// process": it persists nothing, fails, and cancels the run, as do all
// later saves. What the run wrote between its last kept save and the crash
// is in the table but not in the checkpoint, as after a kill.
type crashingCheckpoint struct {
	transfer.Checkpoint
	after  int64
	cancel context.CancelFunc

	mu      sync.Mutex
	crashed bool
	kept    []byte
	written int64 // in the last kept save
}

func (c *crashingCheckpoint) Save(ctx context.Context, state []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return errCrash
	}
	var s struct{ Counts struct{ Written int64 } }
	if err := json.Unmarshal(state, &s); err != nil {
		return err
	}
	if c.written >= c.after && s.Counts.Written > c.written {
		c.crashed = true
		c.cancel()
		return errCrash
	}
	c.kept, c.written = state, s.Counts.Written
	return c.Checkpoint.Save(ctx, state)
}

// TestImportResumes: an import that "crashes" (its checkpoint stops at a
// point where more was already written) resumes from the checkpoint and
// leaves the table holding exactly the stream's entities: nothing missing,
// nothing extra. In insert mode the lines the crashed run wrote after its
// last checkpoint are found stored and counted as verified, and one that
// someone changed meanwhile is reported as a conflict and left alone.
func TestImportResumes(t *testing.T) {
	es := manyEntities(7, 3000)
	stream := exportStream(t, es, time.Now())
	for _, mode := range []transfer.Mode{transfer.Insert, transfer.Replace} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := ctxFor(t)
			acct := testenv.Account(t, nil)
			dst := newTable(t, acct)
			path := filepath.Join(t.TempDir(), "import.checkpoint")
			cctx, cancel := context.WithCancel(ctx)
			crash := &crashingCheckpoint{Checkpoint: transfer.NewFileCheckpoint(path), after: 600, cancel: cancel}
			opts := transfer.ImportOptions{
				JobOptions: transfer.JobOptions{Checkpoint: crash, CheckpointEvery: time.Hour}, // saves before each batch only
				BatchSize:  250, Concurrency: 2,
			}
			res, err := transfer.Import(cctx, dst, bytes.NewReader(stream), mode, &opts)
			if !errors.Is(err, errCrash) {
				t.Fatalf("first run: %+v, %v; want the crash", res, err)
			}
			var saved struct {
				Line, Sent int
				Counts     struct{ Written int64 }
			}
			if err := json.Unmarshal(crash.kept, &saved); err != nil {
				t.Fatal(err)
			}
			written := len(readAll(t, dst))
			t.Logf("crashed with %d entities written, checkpoint at line %d (%d written), sent through line %d", written, saved.Line, saved.Counts.Written, saved.Sent)
			if saved.Counts.Written < 600 || int64(written) <= saved.Counts.Written || written >= len(es) {
				t.Fatalf("the crash left %d written and a checkpoint of %d: want more written than recorded, not all", written, saved.Counts.Written)
			}
			// Line i+2 holds es[i]. Someone changes an entity the crashed
			// run wrote after its checkpoint.
			var changed *tablekit.Entity
			if mode == transfer.Insert {
				stored := readAll(t, dst)
				for i := saved.Line - 1; i < len(es); i++ {
					if _, ok := stored[[2]string{es[i].PartitionKey, es[i].RowKey}]; ok {
						changed = &tablekit.Entity{PartitionKey: es[i].PartitionKey, RowKey: es[i].RowKey, Properties: map[string]any{"N": int64(-1)}}
						break
					}
				}
				if changed == nil {
					t.Fatal("no entity written after the checkpoint")
				}
				if _, err := dst.Upsert(ctx, *changed); err != nil {
					t.Fatal(err)
				}
			}

			opts.Checkpoint, opts.CheckpointEvery, opts.Resume = transfer.NewFileCheckpoint(path), 0, true
			res, err = transfer.Import(ctx, dst, bytes.NewReader(stream), mode, &opts)
			want := keyed(es)
			switch mode {
			case transfer.Insert:
				if !errors.Is(err, transfer.ErrFailures) || res.Failed != 1 || len(res.Failures) != 1 ||
					!errors.Is(res.Failures[0].Err, tablekit.ErrAlreadyExists) || res.Failures[0].RowKey != changed.RowKey {
					t.Fatalf("resumed insert: %+v, %v; want the changed entity reported", res, err)
				}
				if res.Verified == 0 {
					t.Errorf("resumed insert verified no entity written by the crashed run: %+v", res)
				}
				want[[2]string{changed.PartitionKey, changed.RowKey}] = *changed
			default:
				if err != nil || res.Failed != 0 {
					t.Fatalf("resumed import: %+v, %v", res, err)
				}
			}
			if !res.Complete || res.Read != int64(len(es)) || res.Written+res.Failed != int64(len(es)) || res.Skipped != saved.Counts.Written {
				t.Errorf("resumed import: %+v; want every line counted once, %d skipped", res, saved.Counts.Written)
			}
			sameEntities(t, want, readAll(t, dst))

			// The checkpoint is complete: resuming again sends nothing.
			before := acct.Meter().Snapshot()
			again, err := transfer.Import(ctx, dst, bytes.NewReader(stream), mode, &opts)
			if d := acct.Meter().Snapshot().Sub(before); d.Count("table", "Transaction") != 0 {
				t.Errorf("resuming a finished import sent %v", d)
			}
			if mode != transfer.Insert && (err != nil || again.Skipped != int64(len(es)) || again.Written != int64(len(es))) {
				t.Errorf("resuming a finished import: %+v, %v", again, err)
			}
		})
	}
}

// TestImportResumeRefusesOtherInput: a checkpoint resumes only the stream
// it was made for.
func TestImportResumeRefusesOtherInput(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	dst := newTable(t, acct)
	es := manyEntities(3, 300)
	created := time.Now()
	stream := exportStream(t, es, created)
	cp := transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "cp"))
	opts := transfer.ImportOptions{JobOptions: transfer.JobOptions{Checkpoint: cp}}
	if _, err := transfer.Import(ctx, dst, bytes.NewReader(stream), transfer.Merge, &opts); err != nil {
		t.Fatal(err)
	}
	opts.Resume = true
	// Another export (another header).
	if _, err := transfer.Import(ctx, dst, bytes.NewReader(exportStream(t, es, created.Add(time.Second))), transfer.Merge, &opts); !errors.Is(err, transfer.ErrCorruptCheckpoint) {
		t.Errorf("resume with another export: %v, want ErrCorruptCheckpoint", err)
	}
	// The same header, other lines.
	other := exportStream(t, es[:299], created)
	if _, err := transfer.Import(ctx, dst, bytes.NewReader(other), transfer.Merge, &opts); !errors.Is(err, transfer.ErrCorruptCheckpoint) {
		t.Errorf("resume with other lines: %v, want ErrCorruptCheckpoint", err)
	}
	// Another mode.
	if _, err := transfer.Import(ctx, dst, bytes.NewReader(stream), transfer.Insert, &opts); !errors.Is(err, transfer.ErrCorruptCheckpoint) {
		t.Errorf("resume in another mode: %v, want ErrCorruptCheckpoint", err)
	}
	// An export's checkpoint is not an import's.
	ecp := transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "export.cp"))
	if _, err := transfer.Export(ctx, dst, &bytes.Buffer{}, &transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: ecp}}); err != nil {
		t.Fatal(err)
	}
	o := opts
	o.Checkpoint = ecp
	if _, err := transfer.Import(ctx, dst, bytes.NewReader(stream), transfer.Merge, &o); !errors.Is(err, transfer.ErrCorruptCheckpoint) {
		t.Errorf("resume from an export's checkpoint: %v, want ErrCorruptCheckpoint", err)
	}
}

// TestImportTableCheckpoint: an import resumes from a checkpoint kept in a
// table, after a cancelled run.
func TestImportTableCheckpoint(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	dst, jobs := newTable(t, acct), newTable(t, acct)
	es := manyEntities(5, 2000)
	stream := exportStream(t, es, time.Now())
	cp, err := transfer.NewTableCheckpoint(jobs, "import-job")
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	var batches atomic.Int32
	stopper, err := tablekit.Open(testenv.ConnectionString(t), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(r *policy.Request) (*http.Response, error) {
		resp, err := r.Next()
		if isBatch(r) && batches.Add(1) == 6 {
			cancel() // after the 6th transaction was applied
		}
		return resp, err
	})}}})
	if err != nil {
		t.Fatal(err)
	}
	dst2, err := tablekit.OpenTable[tablekit.Entity](stopper, dst.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := transfer.ImportOptions{JobOptions: transfer.JobOptions{Checkpoint: cp}, BatchSize: 300, Concurrency: 1}
	res, err := transfer.Import(cctx, dst2, bytes.NewReader(stream), transfer.Insert, &opts)
	if !errors.Is(err, context.Canceled) || res.Written == 0 {
		t.Fatalf("cancelled import: %+v, %v", res, err)
	}
	cp2, _ := transfer.NewTableCheckpoint(jobs, "import-job")
	opts.Checkpoint, opts.Resume = cp2, true
	res, err = transfer.Import(ctx, dst, bytes.NewReader(stream), transfer.Insert, &opts)
	if err != nil || res.Failed != 0 || res.Written != int64(len(es)) || res.Skipped == 0 {
		t.Fatalf("resumed import: %+v, %v", res, err)
	}
	sameEntities(t, keyed(es), readAll(t, dst))
}

// TestCountResumes: a count stopped halfway resumes with its per-range
// partial counts and ends with the same figures as a count in one go.
func TestCountResumes(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	seedMany(t, tbl, 7, 1234)
	cpPath := filepath.Join(t.TempDir(), "count.checkpoint")
	cp := transfer.NewFileCheckpoint(cpPath)
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: cp}, Concurrency: 3, PageSize: 40, Boundaries: []string{"p002", "p005"}}
	cctx, cancel := context.WithCancel(ctx)
	var pages atomic.Int32
	stopper, err := tablekit.Open(testenv.ConnectionString(t), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(r *policy.Request) (*http.Response, error) {
		if isQuery(r) && pages.Add(1) == 12 {
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
	res, err := transfer.Count(cctx, tbl2, &opts)
	if !errors.Is(err, context.Canceled) || res.Complete || res.Entities == 0 || res.Entities >= 1234 {
		t.Fatalf("stopped count: %+v, %v", res, err)
	}
	if _, err := os.Stat(cpPath); err != nil {
		t.Fatal(err)
	}
	opts.Resume = true
	res, err = transfer.Count(ctx, tbl, &opts)
	// 1234 over 7 partitions: 177 in the first 2, 176 in the other 5.
	if err != nil || !res.Complete || res.Entities != 1234 || res.Partitions != 7 || res.DeleteTransactions != 14 {
		t.Errorf("resumed count: %+v, %v", res, err)
	}
}

// TestCopyResumesInsert: an insert copy that "crashes" after writing past
// its last checkpoint resumes without failures: the entities it wrote are
// found stored as the source has them. The destination ends with exactly
// the source's entities.
func TestCopyResumesInsert(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	src, dst := newTable(t, acct), newTable(t, acct)
	es := seedMany(t, src, 6, 3000)
	path := filepath.Join(t.TempDir(), "copy.checkpoint")
	cctx, cancel := context.WithCancel(ctx)
	crash := &crashingCheckpoint{Checkpoint: transfer.NewFileCheckpoint(path), after: 500, cancel: cancel}
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: crash, CheckpointEvery: 30 * time.Millisecond}, Concurrency: 2, PageSize: 100, Boundaries: []string{"p003"}}
	res, err := transfer.Copy(cctx, src, dst, transfer.Insert, &opts)
	if err == nil || res.Complete {
		t.Fatalf("first run: %+v, %v; want the crash", res, err)
	}
	var saved struct{ Counts struct{ Written int64 } }
	if err := json.Unmarshal(crash.kept, &saved); err != nil {
		t.Fatal(err)
	}
	written := len(readAll(t, dst))
	t.Logf("crashed with %d entities written, %d in the checkpoint", written, saved.Counts.Written)
	if int64(written) <= saved.Counts.Written || written >= len(es) {
		t.Fatalf("the crash left %d written and a checkpoint of %d: want more written than recorded, not all", written, saved.Counts.Written)
	}
	opts.Checkpoint, opts.Resume = transfer.NewFileCheckpoint(path), true
	res, err = transfer.Copy(ctx, src, dst, transfer.Insert, &opts)
	if err != nil || !res.Complete || res.Failed != 0 || res.Written != int64(len(es)) || res.Verified == 0 {
		t.Fatalf("resumed copy: %+v, %v; want every entity written, some verified", res, err)
	}
	sameEntities(t, keyed(es), readAll(t, dst))
}

// TestCopyResumeWithoutCheckpoint: an insert copy resumed when its
// checkpoint holds nothing (the run being resumed was killed before it
// kept one, or its checkpoint was lost) finds the entities dst already
// holds exactly as the source has them, EDM types included, and counts
// them as written, not failed; an entity stored with other values, or
// with the same value under another EDM type, is still a conflict. (Such
// a run started as a first run, and every entity the killed run had
// copied failed with EntityAlreadyExists.)
func TestCopyResumeWithoutCheckpoint(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	src, dst := newTable(t, acct), newTable(t, acct)
	es := seedMany(t, src, 4, 1000)
	want := keyed(es)
	pre := append([]tablekit.Entity(nil), es[:300]...) // copied by the lost run
	other := tablekit.Entity{PartitionKey: es[300].PartitionKey, RowKey: es[300].RowKey, Properties: map[string]any{"N": int64(-1), "Name": "entity", "Score": es[300].Properties["Score"]}}
	typed := tablekit.Entity{PartitionKey: es[301].PartitionKey, RowKey: es[301].RowKey, Properties: map[string]any{"N": int32(301), "Name": "entity", "Score": es[301].Properties["Score"]}}
	pre = append(pre, other, typed)
	for _, e := range []tablekit.Entity{other, typed} {
		want[[2]string{e.PartitionKey, e.RowKey}] = e
	}
	seed(t, dst, pre)

	path := filepath.Join(t.TempDir(), "copy.checkpoint") // never saved
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: transfer.NewFileCheckpoint(path), Resume: true}, Concurrency: 2, PageSize: 100}
	res, err := transfer.Copy(ctx, src, dst, transfer.Insert, &opts)
	if !errors.Is(err, transfer.ErrFailures) || res.Failed != 2 || res.Verified != 300 || res.Written != 998 || !res.Complete {
		t.Errorf("resumed copy: %d failed, %d verified, %d written, complete %v, %v; want 2 failed, 300 verified, 998 written, complete",
			res.Failed, res.Verified, res.Written, res.Complete, err)
	}
	for i, f := range res.Failures {
		if i == 5 {
			t.Errorf("... and %d more failures", len(res.Failures)-5)
			break
		}
		if !errors.Is(f, tablekit.ErrAlreadyExists) || (f.RowKey != other.RowKey && f.RowKey != typed.RowKey) {
			t.Errorf("failure %v: want only the two entities stored with other values, as conflicts", f)
		}
	}
	sameEntities(t, want, readAll(t, dst))
}

// stoppedCopy runs an insert copy of src to dst that stops at its first
// transaction, before sending it (the context is cancelled), and leaves a
// checkpoint at path that has written nothing. opts are the copy's.
func stoppedCopy(t *testing.T, src, dst *tablekit.Table[tablekit.Entity], path string, opts transfer.Options) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	stopper, err := tablekit.Open(testenv.ConnectionString(t), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(r *policy.Request) (*http.Response, error) {
		if isBatch(r) {
			cancel()
			return nil, context.Canceled
		}
		return r.Next()
	})}}})
	if err != nil {
		t.Fatal(err)
	}
	dst2, err := tablekit.OpenTable[tablekit.Entity](stopper, dst.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Checkpoint = transfer.NewFileCheckpoint(path)
	if res, err := transfer.Copy(cctx, src, dst2, transfer.Insert, &opts); !errors.Is(err, context.Canceled) || res.Complete || res.Written != 0 {
		t.Fatalf("stopped copy: %+v, %v", res, err)
	}
	if n := len(readAll(t, dst)); n != 0 {
		t.Fatalf("the stopped copy wrote %d entities", n)
	}
}

// TestCopyResumedInsertLookups: a resumed insert copy looks up what the
// destination holds page after page while it finds entities there, not
// only entities stored as the source has them, and again after a clean
// page when an insert meets an entity the run being resumed wrote (a
// range it had split off after its last checkpoint). It used to stop
// looking at the first page without an identical entity, and reported
// every later entity the killed run had written as a conflict.
func TestCopyResumedInsertLookups(t *testing.T) {
	for _, tc := range []struct {
		name             string
		other, written   [2]int // rows [from, to) stored with other values, and as the source has them
		failed, verified int64
	}{
		{"conflicts on a page", [2]int{0, 10}, [2]int{100, 400}, 10, 300},
		{"written after a clean page", [2]int{0, 0}, [2]int{300, 400}, 0, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			acct := testenv.Account(t, nil)
			src, dst := newTable(t, acct), newTable(t, acct)
			es := seedMany(t, src, 1, 600)
			path := filepath.Join(t.TempDir(), "copy.checkpoint")
			opts := transfer.Options{Concurrency: 1, PageSize: 100}
			stoppedCopy(t, src, dst, path, opts)
			// What the killed run wrote, and entities dst held before.
			want := keyed(es)
			var pre []tablekit.Entity
			for i := tc.other[0]; i < tc.other[1]; i++ {
				e := tablekit.Entity{PartitionKey: es[i].PartitionKey, RowKey: es[i].RowKey, Properties: map[string]any{"N": int64(-1)}}
				pre = append(pre, e)
				want[[2]string{e.PartitionKey, e.RowKey}] = e
			}
			pre = append(pre, es[tc.written[0]:tc.written[1]]...)
			seed(t, dst, pre)

			opts.Checkpoint, opts.Resume = transfer.NewFileCheckpoint(path), true
			res, err := transfer.Copy(ctx, src, dst, transfer.Insert, &opts)
			t.Logf("resumed copy: %+v, %v", res, err)
			if res.Failed != tc.failed || res.Verified != tc.verified || res.Written != int64(len(es))-tc.failed || !res.Complete {
				t.Errorf("resumed copy: %d failed, %d verified, %d written, complete %v; want %d failed, %d verified, %d written, complete",
					res.Failed, res.Verified, res.Written, res.Complete, tc.failed, tc.verified, int64(len(es))-tc.failed)
			}
			for _, f := range res.Failures {
				if !errors.Is(f, tablekit.ErrAlreadyExists) || f.RowKey >= es[tc.other[1]].RowKey {
					t.Errorf("failure %v: want only the entities stored with other values, as conflicts", f)
				}
			}
			sameEntities(t, want, readAll(t, dst))
		})
	}
}

// TestCopyHoldsPassingFailures: a page with entities that failed for a
// passing reason (here throttled beyond every retry) is not committed:
// its range stops there for the run, the copy says it is incomplete, and
// a resumed copy writes those entities. (The page used to be committed,
// so that --resume never tried them again.)
func TestCopyHoldsPassingFailures(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	src := newTable(t, acct)
	es := seedMany(t, src, 2, 600)
	// The first transaction sent is answered 503 (a governed transaction
	// is not retried by the SDK: the BulkWriter waits for the Governor).
	inj, err := chaos.New(1, &chaos.Config{ServerBusy: 1, MaxConsecutive: -1, MaxFaults: 1, Services: []string{"table"}, Operations: []string{"Transaction"}})
	if err != nil {
		t.Fatal(err)
	}
	facct := inj.Account(t, &tablekit.Options{Governor: tablekit.NewGovernor(&tablekit.GovernorOptions{HotPartition: -1})})
	inj.SetEnabled(false)
	dst := newTable(t, facct)
	inj.SetEnabled(true)
	path := filepath.Join(t.TempDir(), "copy.checkpoint")
	opts := transfer.Options{JobOptions: transfer.JobOptions{Checkpoint: transfer.NewFileCheckpoint(path)}, Concurrency: 2, PageSize: 100, Boundaries: []string{"p001"}}
	noRetry := &tablekit.BulkOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 1}}
	res, err := transfer.CopyWithBulk(ctx, src, dst, transfer.Insert, &opts, noRetry)
	t.Logf("first run: read %d, written %d, failed %d, complete %v: %v; %v", res.Read, res.Written, res.Failed, res.Complete, err, inj.Stats())
	if inj.Stats().Faults() != 1 {
		t.Fatalf("%d faults injected, want 1", inj.Stats().Faults())
	}
	if !errors.Is(err, transfer.ErrFailures) || res.Complete || res.Failed != 100 || len(res.Failures) != 100 || !wire.IsThrottled(res.Failures[0]) {
		t.Fatalf("first run: %+v, %v; want 100 throttled failures and an incomplete copy", res, err)
	}
	opts.Resume = true
	res, err = transfer.Copy(ctx, src, dst, transfer.Insert, &opts)
	if err != nil || !res.Complete || res.Failed != 0 || res.Read != int64(len(es)) || res.Written != int64(len(es)) {
		t.Fatalf("resumed copy: %+v, %v; want every entity written once", res, err)
	}
	sameEntities(t, keyed(es), readAll(t, dst))

	// Without a checkpoint nothing could copy a held page later: the
	// copy goes on past it and reports the failures.
	inj.SetEnabled(false)
	other := newTable(t, facct)
	inj2, err := chaos.New(1, &chaos.Config{ServerBusy: 1, MaxConsecutive: -1, MaxFaults: 1, Services: []string{"table"}, Operations: []string{"Transaction"}})
	if err != nil {
		t.Fatal(err)
	}
	other2, err := tablekit.OpenTable[tablekit.Entity](inj2.Account(t, nil), other.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Checkpoint, opts.Resume = nil, false
	res, err = transfer.CopyWithBulk(ctx, src, other2, transfer.Insert, &opts, noRetry)
	if !errors.Is(err, transfer.ErrFailures) || !res.Complete || res.Read != int64(len(es)) || res.Failed != 100 || res.Written != int64(len(es))-100 {
		t.Errorf("copy without a checkpoint: %d read, %d written, %d failed, complete %v, %v; want it to go on past the throttled page",
			res.Read, res.Written, res.Failed, res.Complete, err)
	}
}

// TestImportHoldsPassingFailures: lines that failed for a passing reason
// (here throttled beyond every retry) hold the checkpoint back, so the
// import says it is incomplete (the command exits 3, "run again with
// --resume", not 4, "done, some failed") and a resumed import writes them.
// Without a checkpoint the failures are the result, and it is complete.
func TestImportHoldsPassingFailures(t *testing.T) {
	ctx := ctxFor(t)
	es := manyEntities(3, 300)
	stream := exportStream(t, es, time.Now())
	noRetry := &tablekit.BulkOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 1}}
	throttledOnce := func() *tablekit.Table[tablekit.Entity] {
		// The first transaction sent is answered 503 (a governed
		// transaction is not retried by the SDK: the BulkWriter waits for
		// the Governor, here not at all).
		inj, err := chaos.New(1, &chaos.Config{ServerBusy: 1, MaxConsecutive: -1, MaxFaults: 1, Services: []string{"table"}, Operations: []string{"Transaction"}})
		if err != nil {
			t.Fatal(err)
		}
		acct := inj.Account(t, &tablekit.Options{Governor: tablekit.NewGovernor(&tablekit.GovernorOptions{HotPartition: -1})})
		inj.SetEnabled(false)
		dst := newTable(t, acct)
		inj.SetEnabled(true)
		return dst
	}

	dst := throttledOnce()
	opts := transfer.ImportOptions{JobOptions: transfer.JobOptions{Checkpoint: transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "cp"))}, Concurrency: 1}
	res, err := transfer.ImportWithBulk(ctx, dst, bytes.NewReader(stream), transfer.Insert, &opts, noRetry)
	if !errors.Is(err, transfer.ErrFailures) || res.Failed != 100 || len(res.Failures) == 0 || !wire.IsThrottled(res.Failures[0]) || res.Complete {
		t.Fatalf("first run: %d read, %d written, %d failed, complete %v, %v; want 100 throttled and an incomplete import", res.Read, res.Written, res.Failed, res.Complete, err)
	}
	opts.Resume = true
	res, err = transfer.Import(ctx, dst, bytes.NewReader(stream), transfer.Insert, &opts)
	if err != nil || !res.Complete || res.Failed != 0 || res.Read != int64(len(es)) {
		t.Fatalf("resumed import: %d read, %d written, %d failed, complete %v, %v; want every line written", res.Read, res.Written, res.Failed, res.Complete, err)
	}
	sameEntities(t, keyed(es), readAll(t, dst))

	dst = throttledOnce()
	res, err = transfer.ImportWithBulk(ctx, dst, bytes.NewReader(stream), transfer.Insert, &transfer.ImportOptions{Concurrency: 1}, noRetry)
	if !errors.Is(err, transfer.ErrFailures) || res.Failed != 100 || !res.Complete {
		t.Errorf("without a checkpoint: %d failed, complete %v, %v; want 100 failed and complete", res.Failed, res.Complete, err)
	}
}
