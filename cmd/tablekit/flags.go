package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/transfer"
)

// tableFlags name a table and its account.
type tableFlags struct {
	prefix     string // "" or "to-"
	connection string
	sasURL     string
	table      string
}

func (f *tableFlags) register(fs *flag.FlagSet, prefix, what string) {
	f.prefix = prefix
	if what != "" {
		what += " "
	}
	deflt := "$AZURE_STORAGE_CONNECTION_STRING"
	if prefix != "" {
		deflt = "the source's"
	}
	fs.StringVar(&f.connection, prefix+"connection-string", "", "connection string of the "+what+"account (default "+deflt+")")
	fs.StringVar(&f.sasURL, prefix+"sas-url", "", "table SAS URL of the "+what+"table (instead of a connection string and --"+prefix+"table)")
	fs.StringVar(&f.table, prefix+"table", "", "name of the "+what+"table")
}

// opened is a table and its account.
type opened struct {
	table *tablekit.Table[tablekit.Entity]
	acct  *tablekit.Account // nil for a SAS URL
}

// open opens the table the flags name; fallback is the connection string
// to use when none is given (the source's, for a copy's destination).
func (f *tableFlags) open(e *env, fallback string) (*opened, error) {
	if f.sasURL != "" {
		if f.connection != "" {
			return nil, usagef("--%ssas-url and --%sconnection-string exclude each other", f.prefix, f.prefix)
		}
		t, err := sas.OpenTable[tablekit.Entity](f.sasURL, nil, nil)
		if err != nil {
			return nil, err
		}
		if f.table != "" && f.table != t.Name() {
			return nil, usagef("--%stable %q differs from the table of the SAS URL (%q)", f.prefix, f.table, t.Name())
		}
		return &opened{table: t}, nil
	}
	if f.table == "" {
		return nil, usagef("--%stable is required (or --%ssas-url)", f.prefix, f.prefix)
	}
	cs := f.connection
	if cs == "" {
		cs = fallback
	}
	if cs == "" {
		cs = e.getenv("AZURE_STORAGE_CONNECTION_STRING")
	}
	if cs == "" {
		return nil, usagef("no account: set AZURE_STORAGE_CONNECTION_STRING, or give --%sconnection-string or --%ssas-url", f.prefix, f.prefix)
	}
	acct, err := e.openAccount(cs)
	if err != nil {
		return nil, err
	}
	t, err := tablekit.OpenTable[tablekit.Entity](acct, f.table, nil)
	if err != nil {
		return nil, err
	}
	return &opened{table: t, acct: acct}, nil
}

// scopeFlags select entities.
type scopeFlags struct {
	partition, from, to, filter, olderThan string
	hasPartition                           bool
}

func (f *scopeFlags) register(fs *flag.FlagSet) {
	fs.Func("partition", "only this PartitionKey", func(s string) error { f.partition, f.hasPartition = s, true; return nil })
	fs.StringVar(&f.from, "from", "", "first PartitionKey of the range (inclusive)")
	fs.StringVar(&f.to, "to", "", "end of the PartitionKey range (exclusive)")
	fs.StringVar(&f.filter, "filter", "", "an OData filter the entities must also match, e.g. \"Status eq 'done'\"")
	fs.StringVar(&f.olderThan, "older-than", "", "only entities last written before this: a duration back from the job's start (720h; --resume keeps the first run's cutoff) or an RFC 3339 time")
}

func (f *scopeFlags) empty() bool {
	return !f.hasPartition && f.from == "" && f.to == "" && f.filter == "" && f.olderThan == ""
}

// scope builds the transfer.Scope. A duration --older-than becomes
// Scope.OlderThan, so that the library fixes the cutoff when the job
// starts and a resumed run keeps it.
func (f *scopeFlags) scope() (transfer.Scope, error) {
	var s transfer.Scope
	if f.hasPartition {
		if f.from != "" || f.to != "" {
			return s, usagef("--partition cannot be combined with --from or --to")
		}
		p := f.partition
		s.Partition = &p
	}
	s.From, s.To = f.from, f.to
	var fs []tablekit.Filter
	if strings.TrimSpace(f.filter) != "" {
		if strings.Contains(f.filter, "?") {
			return s, usagef("--filter must not contain '?': write literal values ('text', 42, datetime'2024-01-01T00:00:00Z')")
		}
		fs = append(fs, tablekit.Where(f.filter))
	}
	if f.olderThan != "" {
		age, cutoff, err := parseOlderThan(f.olderThan)
		if err != nil {
			return s, err
		}
		if age > 0 {
			s.OlderThan = age
		} else {
			fs = append(fs, tablekit.Where("Timestamp lt ?", cutoff))
		}
	}
	s.Filter = tablekit.And(fs...)
	if err := s.Filter.Err(); err != nil {
		return s, usagef("--filter: %v", err)
	}
	return s, nil
}

// parseOlderThan parses --older-than: a positive duration (age) or an
// RFC 3339 time (cutoff).
func parseOlderThan(s string) (age time.Duration, cutoff time.Time, err error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, time.Time{}, usagef("--older-than %s: the duration must be positive", s)
		}
		return d, time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return 0, t.UTC(), nil
	}
	return 0, time.Time{}, usagef("--older-than %q is neither a duration (720h) nor an RFC 3339 time (2024-01-31T00:00:00Z)", s)
}

// scanFlags say how to read.
type scanFlags struct {
	concurrency, pageSize, maxProbes int
	boundaries                       []string
}

func (f *scanFlags) register(fs *flag.FlagSet, probes string) {
	fs.IntVar(&f.concurrency, "concurrency", 16, "PartitionKey ranges read at once (1-1024)")
	fs.IntVar(&f.pageSize, "page-size", 1000, "entities per listing request (1-1000)")
	fs.IntVar(&f.maxProbes, "max-probes", 0, "keys-only probes to sample the key space into ranges (0: default, "+probes+"; -1: none; at most 1000000)")
	fs.Func("boundary", "split the ranges at this PartitionKey (repeat the flag; no sampling then)", func(s string) error {
		f.boundaries = append(f.boundaries, s)
		return nil
	})
}

// check refuses values out of range before anything is sent.
func (f *scanFlags) check() error {
	return errors.Join(
		intIn("concurrency", f.concurrency, 1, 1024),
		intIn("page-size", f.pageSize, 1, 1000),
		intIn("max-probes", f.maxProbes, -1, 1_000_000),
	)
}

// options returns the transfer options of the scan and checkpoint flags
// for scope, reporting progress to disp.
func (f *scanFlags) options(scope transfer.Scope, checkpoint transfer.Checkpoint, cp *checkpointFlags, disp *display) transfer.Options {
	return transfer.Options{
		JobOptions: transfer.JobOptions{Checkpoint: checkpoint, CheckpointEvery: cp.every, Resume: cp.resume, OnProgress: disp.callback()},
		Scope:      scope, Concurrency: f.concurrency, PageSize: f.pageSize, MaxProbes: f.maxProbes, Boundaries: f.boundaries,
	}
}

// parseMode parses --mode: insert, merge or replace.
func parseMode(s string) (transfer.Mode, error) {
	for _, m := range []transfer.Mode{transfer.Insert, transfer.Merge, transfer.Replace} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, usagef("--mode %q: want insert, merge or replace", s)
}

// checkpointFlags say where the state is kept.
type checkpointFlags struct {
	file, table, job string
	none, resume     bool
	every            time.Duration
}

func (f *checkpointFlags) register(fs *flag.FlagSet, deflt string) {
	fs.StringVar(&f.file, "checkpoint", "", "checkpoint file (default "+deflt+")")
	fs.StringVar(&f.table, "checkpoint-table", "", "keep the checkpoint in this table (of the same account) instead of a file")
	fs.StringVar(&f.job, "job", "", "the checkpoint's name in --checkpoint-table (default: OPERATION-TABLE)")
	fs.BoolVar(&f.none, "no-checkpoint", false, "keep no checkpoint (the run cannot be resumed)")
	fs.BoolVar(&f.resume, "resume", false, "go on from the checkpoint of an earlier run")
	fs.DurationVar(&f.every, "checkpoint-every", 5*time.Second, "time between checkpoints (at least 10ms)")
}

// check refuses values out of range before anything is sent.
func (f *checkpointFlags) check() error {
	return durationAtLeast("checkpoint-every", f.every, 10*time.Millisecond)
}

// open returns the checkpoint (nil with --no-checkpoint).
func (f *checkpointFlags) open(ctx context.Context, src *opened, op, deflt string) (transfer.Checkpoint, error) {
	switch {
	case f.none && (f.resume || f.file != "" || f.table != ""):
		return nil, usagef("--no-checkpoint excludes --resume, --checkpoint and --checkpoint-table")
	case f.none:
		return nil, nil
	case f.file != "" && f.table != "":
		return nil, usagef("--checkpoint and --checkpoint-table exclude each other")
	case f.table != "":
		if src.acct == nil {
			return nil, usagef("--checkpoint-table needs an account connection string, not a SAS URL")
		}
		t, err := tablekit.OpenTable[tablekit.Entity](src.acct, f.table, nil)
		if err != nil {
			return nil, err
		}
		if err := t.CreateIfNotExists(ctx); err != nil {
			return nil, err
		}
		job := f.job
		if job == "" {
			job = op + "-" + src.table.Name()
		}
		return transfer.NewTableCheckpoint(t, job)
	case f.file != "":
		return transfer.NewFileCheckpoint(f.file), nil
	}
	if deflt == "" {
		if f.resume {
			return nil, usagef("--resume needs --checkpoint or --checkpoint-table")
		}
		return nil, nil
	}
	return transfer.NewFileCheckpoint(deflt), nil
}

// intIn returns a usage error unless lo <= v <= hi, saying the range.
func intIn(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usagef("--%s %d is out of range: it must be from %d to %d", name, v, lo, hi)
	}
	return nil
}

// durationAtLeast returns a usage error unless d >= lo.
func durationAtLeast(name string, d, lo time.Duration) error {
	if d < lo {
		return usagef("--%s %v is out of range: it must be at least %v", name, d, lo)
	}
	return nil
}

// parse parses args, turning flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// newFlagSet returns a flag set whose -h prints usage to stderr.
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: tablekit %s %s\n\nFlags:\n", name, synopsis)
		fs.SetOutput(e.stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}
