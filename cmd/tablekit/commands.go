package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tablekit/tablekit/transfer"
)

func runExport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "export", "--table T [scope] [--out FILE] [--resume]")
	var (
		src  tableFlags
		sc   scopeFlags
		scan scanFlags
		cp   checkpointFlags
		pf   progressFlags
		out  string
	)
	registerScoped(fs, &src, &sc, &scan, &cp, &pf, "source", "4 x concurrency")
	fs.StringVar(&out, "out", "-", "the export file (written as FILE.partial, renamed FILE when the export is complete); - for stdout")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := errors.Join(scan.check(), cp.check()); err != nil {
		return err
	}
	scope, err := sc.scope()
	if err != nil {
		return err
	}
	if out == "-" && cp.resume {
		return usagef("--resume needs --out FILE: stdout cannot be resumed")
	}
	t, err := src.open(e, "")
	if err != nil {
		return err
	}
	var id []string // no default checkpoint for stdout
	if out != "-" {
		abs, err := filepath.Abs(out)
		if err != nil {
			return err
		}
		id = []string{t.id, sc.id(), abs}
	}
	ck, err := cp.open(t, "export", id)
	if err != nil {
		return err
	}
	disp, err := newDisplay(e, &pf, "export")
	if err != nil {
		return err
	}
	if err := ck.start(ctx, e, "export", cp.resume); err != nil {
		return err
	}
	var w io.Writer = e.stdout
	var x *exportFile
	var f *os.File
	if out != "-" {
		if x, err = openExportFile(ctx, out, ck.cp, cp.resume); err != nil {
			return err
		}
		f, w = x.f, x.f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	opts := scan.options(scope, ck.cp, &cp, disp)
	res, err := transfer.Export(ctx, t.table, syncWriter{bw, f}, &opts)
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	complete := err == nil && res.Complete
	if x != nil {
		// An unfinished export is kept for --resume when its checkpoint
		// records some of it; else nothing of it is left.
		kept, cerr := x.close(complete, ck.cp != nil && res.Bytes > 0)
		if err == nil && cerr != nil {
			err, complete = cerr, false
		}
		if kept {
			fmt.Fprintf(e.stderr, "export: unfinished export kept in %s\n", x.partial)
		}
	}
	fmt.Fprintf(e.stderr, "export: %d entities, %d bytes, %d ranges, %d transactions, %s\n", res.Entities, res.Bytes, res.Ranges, res.Transactions, res.Elapsed.Round(time.Millisecond))
	ck.end(ctx, e, "export", err, complete, res.Bytes == 0)
	return finish(ctx, err, res.Complete)
}

// syncWriter flushes its buffer and syncs the file under it when the
// export takes a checkpoint.
type syncWriter struct {
	*bufio.Writer
	f *os.File
}

func (w syncWriter) Sync() error {
	if err := w.Writer.Flush(); err != nil {
		return err
	}
	if w.f != nil {
		return w.f.Sync()
	}
	return nil
}

// exportFile is the output of an export to a file. It is written aside,
// as FILE.partial in the same folder, and renamed FILE once the export is
// complete: an export that fails or stops leaves FILE as it was (absent,
// or an earlier export). A FILE that is not a regular file (a device, a
// pipe) is written directly.
type exportFile struct {
	f       *os.File
	path    string
	partial string // "": f is path itself
}

// openExportFile opens the output of an export to path: FILE.partial,
// created empty, or when resuming truncated to the size the checkpoint
// recorded. A resumed export without FILE.partial goes on in FILE itself
// when FILE holds that size: it finished before (and a kept checkpoint
// says so), or an earlier version of the command wrote FILE directly.
func openExportFile(ctx context.Context, path string, cp transfer.Checkpoint, resume bool) (*exportFile, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &exportFile{f: f, path: path}, nil
	}
	x := &exportFile{path: path, partial: path + ".partial"}
	var off int64
	ok := false
	if resume && cp != nil {
		var err error
		if off, ok, err = transfer.ExportResumeOffset(ctx, cp); err != nil {
			return nil, err
		}
	}
	if !ok {
		f, err := os.Create(x.partial)
		if err != nil {
			return nil, err
		}
		x.f = f
		return x, nil
	}
	name := x.partial
	if _, err := os.Stat(x.partial); errors.Is(err, os.ErrNotExist) {
		if st, err := os.Stat(path); err == nil && st.Size() >= off {
			name, x.partial = path, ""
		}
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if st, err := f.Stat(); err != nil || st.Size() < off {
		f.Close()
		return nil, fmt.Errorf("resume: %s is shorter than the %d bytes its checkpoint recorded", name, off)
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	x.f = f
	return x, nil
}

// close closes the output. A complete export is renamed into place; an
// unfinished one is kept for --resume when keep says so (its checkpoint
// records it), else removed. It reports whether it kept one.
func (x *exportFile) close(complete, keep bool) (kept bool, err error) {
	err = x.f.Close()
	if x.partial == "" {
		return false, err
	}
	if complete && err == nil {
		if err := os.Rename(x.partial, x.path); err != nil {
			os.Remove(x.partial)
			return false, err
		}
		if d, err := os.Open(filepath.Dir(x.path)); err == nil {
			d.Sync() // make the rename durable; not every file system can
			d.Close()
		}
		return false, nil
	}
	if keep {
		return true, err
	}
	os.Remove(x.partial)
	return false, err
}

// finish maps a library result to the command's error.
func finish(ctx context.Context, err error, complete bool) error {
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("interrupted: %w", errIncomplete)
	case errors.Is(err, transfer.ErrFailures) && !complete:
		// Entities failed for a passing reason (throttled, no answer):
		// their pages are left for --resume.
		return fmt.Errorf("%v; %w", err, errIncomplete)
	case errors.Is(err, transfer.ErrFailures):
		return fmt.Errorf("%w: %v", errFailures, err)
	case err != nil:
		return err
	case !complete:
		return errIncomplete
	}
	return nil
}

func runImport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "import", "--table T [--in FILE] [--mode insert|merge|replace] [--create] [--resume]")
	var (
		dst            tableFlags
		cp             checkpointFlags
		pf             progressFlags
		in, mode       string
		create         bool
		batch, maxFail int
		concurrency    int
	)
	dst.register(fs, "", "destination")
	cp.register(fs)
	pf.register(fs)
	fs.StringVar(&in, "in", "-", "the export file; - for stdin")
	fs.StringVar(&mode, "mode", "insert", "insert (existing entities fail), merge or replace")
	fs.BoolVar(&create, "create", false, "create the table if it does not exist")
	fs.IntVar(&batch, "batch", 20000, "entities per bulk write (1-100000)")
	fs.IntVar(&maxFail, "max-failures", 0, "stop after this many failed entities (0: never)")
	fs.IntVar(&concurrency, "concurrency", 16, "transactions in flight (1-1024)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := errors.Join(cp.check(), intIn("batch", batch, 1, 100_000), intIn("max-failures", maxFail, 0, math.MaxInt),
		intIn("concurrency", concurrency, 1, 1024)); err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	t, err := dst.open(e, "")
	if err != nil {
		return err
	}
	r, inID := e.stdin, "-"
	if in != "-" {
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f // Import takes the file's size from it, for Progress
		if inID, err = filepath.Abs(in); err != nil {
			return err
		}
	}
	ck, err := cp.open(t, "import", []string{t.id, inID})
	if err != nil {
		return err
	}
	disp, err := newDisplay(e, &pf, "import")
	if err != nil {
		return err
	}
	if create {
		err = t.table.CreateIfNotExists(ctx)
	} else {
		err = t.mustExist(ctx, "--table")
	}
	if err != nil {
		return err
	}
	if err := ck.start(ctx, e, "import", cp.resume); err != nil {
		return err
	}
	res, err := transfer.Import(ctx, t.table, r, m, &transfer.ImportOptions{
		JobOptions: transfer.JobOptions{Checkpoint: ck.cp, CheckpointEvery: cp.every, Resume: cp.resume, OnProgress: disp.callback()},
		BatchSize:  batch, MaxFailures: maxFail, Concurrency: concurrency,
	})
	for i, f := range res.Failures {
		if i == 20 {
			fmt.Fprintf(e.stderr, "import: ... and %d more failures\n", res.Failed-20)
			break
		}
		fmt.Fprintf(e.stderr, "import: %v\n", f)
	}
	fmt.Fprintf(e.stderr, "import: %d read, %d written, %d failed, %d transactions, %s\n", res.Read, res.Written, res.Failed, res.Transactions, res.Elapsed.Round(time.Millisecond))
	if res.Skipped > 0 || res.Verified > 0 {
		fmt.Fprintf(e.stderr, "import: resumed: %d lines skipped (done before), %d entities found already written\n", res.Skipped, res.Verified)
	}
	ck.end(ctx, e, "import", err, res.Complete, res.Read == 0)
	// A run stopped by --max-failures is not one to resume blindly: its
	// failures are the result (exit 4). Lines that failed for a passing
	// reason leave it incomplete (exit 3: --resume sends them again).
	stoppedAtMax := maxFail > 0 && len(res.Failures) > maxFail // this run's (the first 1,000)
	return finish(ctx, err, res.Complete || stoppedAtMax)
}

func runCopy(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "copy", "--table T --to-table U [--to-connection-string CS | --to-sas-url URL] [scope] [--mode ...]")
	var (
		src, dst tableFlags
		sc       scopeFlags
		scan     scanFlags
		cp       checkpointFlags
		pf       progressFlags
		mode     string
		create   bool
	)
	dst.register(fs, "to-", "destination")
	registerScoped(fs, &src, &sc, &scan, &cp, &pf, "source", "4 x concurrency")
	fs.StringVar(&mode, "mode", "replace", "insert (existing entities fail, unless stored as the source has them on --resume), merge or replace")
	fs.BoolVar(&create, "create", false, "create the destination table if it does not exist")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := errors.Join(scan.check(), cp.check()); err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	scope, err := sc.scope()
	if err != nil {
		return err
	}
	s, err := src.open(e, "")
	if err != nil {
		return err
	}
	d, err := dst.open(e, src.connection)
	if err != nil {
		return err
	}
	ck, err := cp.open(s, "copy", []string{s.id, d.id, sc.id()})
	if err != nil {
		return err
	}
	disp, err := newDisplay(e, &pf, "copy")
	if err != nil {
		return err
	}
	if create {
		err = d.table.CreateIfNotExists(ctx)
	} else {
		err = d.mustExist(ctx, "--to-table")
	}
	if err != nil {
		return err
	}
	if err := ck.start(ctx, e, "copy", cp.resume); err != nil {
		return err
	}
	opts := scan.options(scope, ck.cp, &cp, disp)
	res, err := transfer.Copy(ctx, s.table, d.table, m, &opts)
	for i, f := range res.Failures {
		if i == 20 {
			fmt.Fprintf(e.stderr, "copy: ... and %d more failures\n", res.Failed-20)
			break
		}
		fmt.Fprintf(e.stderr, "copy: %v\n", f)
	}
	fmt.Fprintf(e.stderr, "copy: %d read, %d written, %d failed, %d ranges, %d transactions, %s\n", res.Read, res.Written, res.Failed, res.Ranges, res.Transactions, res.Elapsed.Round(time.Millisecond))
	if res.Verified > 0 {
		fmt.Fprintf(e.stderr, "copy: resumed: %d entities found already written\n", res.Verified)
	}
	ck.end(ctx, e, "copy", err, res.Complete, res.Read == 0)
	return finish(ctx, err, res.Complete)
}

func runPurge(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "purge", "--table T (--partition PK | --partition-from A --partition-to B | --older-than 720h | --filter EXPR | --all) [--budget 10m] [--dry-run] [--resume]")
	var (
		src          tableFlags
		sc           scopeFlags
		scan         scanFlags
		cp           checkpointFlags
		pf           progressFlags
		all, dry     bool
		anyETag      bool
		budget       time.Duration
		transactions int
	)
	registerScoped(fs, &src, &sc, &scan, &cp, &pf, "", "none: one listing range, the least listing cost; the deletes run in parallel")
	fs.BoolVar(&all, "all", false, "purge the whole table (required when no scope is given)")
	fs.BoolVar(&dry, "dry-run", false, "delete nothing: count the entities and show the cost in transactions")
	fs.BoolVar(&anyETag, "any-etag", false, "delete entities even if they changed since they were listed")
	fs.DurationVar(&budget, "budget", 0, "stop after this long (resume later with --resume); 0: no limit")
	fs.IntVar(&transactions, "transactions", 16, "delete transactions in flight (1-1024)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := errors.Join(scan.check(), cp.check(), durationAtLeast("budget", budget, 0), intIn("transactions", transactions, 1, 1024)); err != nil {
		return err
	}
	if sc.empty() && !all {
		return usagef("give a scope (--partition, --from/--to, --older-than, --filter) or --all to purge the whole table")
	}
	if !sc.empty() && all {
		return usagef("--all excludes a scope")
	}
	scope, err := sc.scope()
	if err != nil {
		return err
	}
	t, err := src.open(e, "")
	if err != nil {
		return err
	}
	disp, err := newDisplay(e, &pf, map[bool]string{true: "purge --dry-run", false: "purge"}[dry])
	if err != nil {
		return err
	}
	if dry {
		// Count reads as the purge would (one range unless --max-probes
		// or --boundary say otherwise), so that the listing cost is the
		// purge's.
		so := scan.options(scope, nil, &checkpointFlags{}, disp)
		res, err := transfer.Count(ctx, t.table, &so)
		if err != nil {
			return finish(ctx, err, false)
		}
		fmt.Fprintf(e.stdout, "entities: %d\npartitions: %d\nlisting transactions: %d\ndelete transactions: %d\npurge cost: %d transactions (listing + deletes)\ncount cost: %d transactions\n",
			res.Entities, res.Partitions, res.Pages, res.DeleteTransactions, res.Pages+res.DeleteTransactions, res.Transactions)
		return nil
	}
	ck, err := cp.open(t, "purge", []string{t.id, sc.id()})
	if err != nil {
		return err
	}
	if err := ck.start(ctx, e, "purge", cp.resume); err != nil {
		return err
	}
	res, err := transfer.Purge(ctx, t.table, &transfer.PurgeOptions{
		Options: scan.options(scope, ck.cp, &cp, disp),
		Budget:  budget, AnyETag: anyETag, Transactions: transactions,
	})
	for i, k := range res.ChangedKeys {
		if i == 20 {
			fmt.Fprintf(e.stderr, "purge: ... and %d more left alone\n", res.Changed-20)
			break
		}
		fmt.Fprintf(e.stderr, "purge: left alone %q/%q: written after it was listed\n", k.PartitionKey, k.RowKey)
	}
	state := "complete"
	if !res.Complete {
		state = "incomplete"
	}
	fmt.Fprintf(e.stdout, "purge %s: %d listed, %d deleted, %d changed since listed (left alone), %d already gone; %d ranges (%d done); %d listing and %d delete transactions, %d in all; %s\n",
		state, res.Listed, res.Deleted, res.Changed, res.Gone, res.Ranges, res.RangesDone, res.Pages, res.DeleteTransactions, res.Transactions, res.Elapsed.Round(time.Millisecond))
	ck.end(ctx, e, "purge", err, res.Complete, res.Listed == 0)
	return finish(ctx, err, res.Complete)
}

func runCount(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "count", "--table T [scope] [--resume]")
	var (
		src  tableFlags
		sc   scopeFlags
		scan scanFlags
		cp   checkpointFlags
		pf   progressFlags
	)
	registerScoped(fs, &src, &sc, &scan, &cp, &pf, "", "none: one listing range, the least cost, one request per 1,000 entities")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := errors.Join(scan.check(), cp.check()); err != nil {
		return err
	}
	scope, err := sc.scope()
	if err != nil {
		return err
	}
	t, err := src.open(e, "")
	if err != nil {
		return err
	}
	ck, err := cp.open(t, "count", []string{t.id, sc.id()})
	if err != nil {
		return err
	}
	disp, err := newDisplay(e, &pf, "count")
	if err != nil {
		return err
	}
	if err := ck.start(ctx, e, "count", cp.resume); err != nil {
		return err
	}
	opts := scan.options(scope, ck.cp, &cp, disp)
	res, err := transfer.Count(ctx, t.table, &opts)
	ck.end(ctx, e, "count", err, res.Complete, res.Entities == 0)
	if err != nil || !res.Complete {
		return finish(ctx, err, res.Complete)
	}
	fmt.Fprintf(e.stdout, "entities: %d\npartitions: %d\nranges: %d\ncost: %d transactions (%d listing requests, %d of them key probes)\n",
		res.Entities, res.Partitions, res.Ranges, res.Transactions, res.Pages, res.Probes)
	return nil
}

// registerScoped registers the flags of a command that reads a scope of a
// table: the table (its role in the help text, e.g. "source"), the scope,
// the key-range scan (scanDefault: the help text of its default), the
// checkpoint and progress.
func registerScoped(fs *flag.FlagSet, src *tableFlags, sc *scopeFlags, scan *scanFlags, cp *checkpointFlags, pf *progressFlags, role, scanDefault string) {
	src.register(fs, "", role)
	sc.register(fs)
	scan.register(fs, scanDefault)
	cp.register(fs)
	pf.register(fs)
}
