package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
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
	// id names the table for a default checkpoint's name: its URL, or
	// its account's settings and its name; without a secret.
	id string
}

// usageOf turns a refusal of the command line's own values (a table
// name, a connection string, a SAS URL: a *tablekit.ValidationError,
// before anything is sent) into a usage error about flag; other errors
// are returned as they are.
func usageOf(flag string, err error) error {
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) {
		return usagef("%s: %v", flag, err)
	}
	return err
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
			return nil, usageOf("--"+f.prefix+"sas-url", err)
		}
		if f.table != "" && f.table != t.Name() {
			return nil, usagef("--%stable %q differs from the table of the SAS URL (%q)", f.prefix, f.table, t.Name())
		}
		id := ""
		if u, err := url.Parse(f.sasURL); err == nil {
			id = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
		}
		return &opened{table: t, id: id}, nil
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
		return nil, usageOf("--"+f.prefix+"connection-string", err)
	}
	t, err := tablekit.OpenTable[tablekit.Entity](acct, f.table, nil)
	if err != nil {
		return nil, usageOf("--"+f.prefix+"table", err)
	}
	return &opened{table: t, acct: acct, id: accountID(cs) + "/" + f.table}, nil
}

// accountID names the account of connection string cs without a secret:
// its settings, but AccountKey and SharedAccessSignature, in order.
func accountID(cs string) string {
	var fields []string
	for f := range strings.SplitSeq(cs, ";") {
		k, _, _ := strings.Cut(f, "=")
		switch k = strings.ToLower(strings.TrimSpace(k)); k {
		case "", "accountkey", "sharedaccesssignature":
		default:
			fields = append(fields, strings.TrimSpace(f))
		}
	}
	slices.Sort(fields)
	return strings.Join(fields, ";")
}

// mustExist checks with one request, before any data moves, that the
// table exists: a missing table is a failure of the whole command, not
// of each entity written into it. A table the credential may not read
// (a SAS without read permission) is not checked.
func (o *opened) mustExist(ctx context.Context, flag string) error {
	_, err := o.table.QueryPage(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: 1, Select: []string{"PartitionKey", "RowKey"}, AllowTableScan: true})
	var re *azcore.ResponseError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tablekit.ErrNotFound):
		return fmt.Errorf("table %q (%s) does not exist: create it, or add --create", o.table.Name(), flag)
	case errors.As(err, &re) && re.StatusCode == 403:
		return nil
	}
	return err
}

// scopeFlags select entities.
type scopeFlags struct {
	partition, from, to, filter, olderThan string
	hasPartition                           bool
}

func (f *scopeFlags) register(fs *flag.FlagSet) {
	fs.Func("partition", "only this PartitionKey", func(s string) error { f.partition, f.hasPartition = s, true; return nil })
	fs.StringVar(&f.from, "partition-from", "", "first PartitionKey of the scope (inclusive)")
	fs.StringVar(&f.to, "partition-to", "", "end of the scope's PartitionKeys (exclusive)")
	fs.StringVar(&f.filter, "filter", "", "an OData filter the entities must also match, e.g. \"Status eq 'done'\"")
	fs.StringVar(&f.olderThan, "older-than", "", "only entities last written before this: a duration back from the job's start (720h; --resume keeps the first run's cutoff) or an RFC 3339 time")
}

// id is the scope as the command line gives it, for a default
// checkpoint's name.
func (f *scopeFlags) id() string {
	p := ""
	if f.hasPartition {
		p = "=" + f.partition
	}
	return strings.Join([]string{"partition" + p, f.from, f.to, f.filter, f.olderThan}, "\x00")
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
			return s, usagef("--partition cannot be combined with --partition-from or --partition-to")
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

func (f *checkpointFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "checkpoint", "", "checkpoint file, kept when the run finishes (default: a file in the user cache folder, "+
		"tablekit/checkpoints, named after the command line, removed when the run finishes)")
	fs.StringVar(&f.table, "checkpoint-table", "", "keep the checkpoint in this table (of the same account) instead of a file")
	fs.StringVar(&f.job, "job", "", "the checkpoint's name in --checkpoint-table (default: OPERATION-TABLE)")
	fs.BoolVar(&f.none, "no-checkpoint", false, "keep no checkpoint (the run cannot be resumed)")
	fs.BoolVar(&f.resume, "resume", false, "go on from the checkpoint of an earlier run of the same command line")
	fs.DurationVar(&f.every, "checkpoint-every", 5*time.Second, "time between checkpoints (at least 10ms)")
}

// check refuses values out of range before anything is sent.
func (f *checkpointFlags) check() error {
	return durationAtLeast("checkpoint-every", f.every, 10*time.Millisecond)
}

// checkpoint is a command's checkpoint.
type checkpoint struct {
	cp transfer.Checkpoint // nil: none
	// path is the file that holds it ("" in a table); chosen says that
	// the command chose it (the default), so that it removes the file
	// when the run finishes.
	path   string
	chosen bool
	// table is the checkpoint table, created by start.
	table *tablekit.Table[tablekit.Entity]
	// existed says that the file was there when the run started.
	existed bool
}

// open returns the checkpoint of a run of op on src (a nil cp with
// --no-checkpoint, or with no default when id is nil), sending nothing:
// [checkpoint.start] prepares it. The default is a file in the user cache
// folder named after op, the table and a hash of id: what identifies the
// job on the command line (tables, scope, files), so that the same
// command line with --resume finds it and another job does not.
func (f *checkpointFlags) open(src *opened, op string, id []string) (*checkpoint, error) {
	switch {
	case f.none && (f.resume || f.file != "" || f.table != ""):
		return nil, usagef("--no-checkpoint excludes --resume, --checkpoint and --checkpoint-table")
	case f.none:
		return &checkpoint{}, nil
	case f.file != "" && f.table != "":
		return nil, usagef("--checkpoint and --checkpoint-table exclude each other")
	case f.table != "":
		if src.acct == nil {
			return nil, usagef("--checkpoint-table needs an account connection string, not a SAS URL")
		}
		t, err := tablekit.OpenTable[tablekit.Entity](src.acct, f.table, nil)
		if err != nil {
			return nil, usageOf("--checkpoint-table", err)
		}
		job := f.job
		if job == "" {
			job = op + "-" + src.table.Name()
		}
		cp, err := transfer.NewTableCheckpoint(t, job)
		if err != nil {
			return nil, usageOf("--job", err)
		}
		return &checkpoint{cp: cp, table: t}, nil
	case f.file != "":
		return &checkpoint{cp: transfer.NewFileCheckpoint(f.file), path: f.file}, nil
	}
	if id == nil {
		if f.resume {
			return nil, usagef("--resume needs --checkpoint or --checkpoint-table")
		}
		return &checkpoint{}, nil
	}
	dir, err := checkpointDir()
	if err != nil {
		return nil, fmt.Errorf("no folder for the checkpoint (give --checkpoint FILE or --no-checkpoint): %w", err)
	}
	h := sha256.Sum256([]byte(strings.Join(append([]string{op}, id...), "\x00")))
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.checkpoint", op, src.table.Name(), hex.EncodeToString(h[:6])))
	return &checkpoint{cp: transfer.NewFileCheckpoint(path), path: path, chosen: true}, nil
}

// checkpointDir is the folder of default checkpoints: tablekit/checkpoints
// in the user cache folder.
func checkpointDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "tablekit", "checkpoints"), nil
}

// start prepares the checkpoint before the run: it creates the checkpoint
// table or the default folder, and says on stderr when --resume finds no
// checkpoint file (the run starts from the beginning).
func (c *checkpoint) start(ctx context.Context, e *env, op string, resume bool) error {
	if c.table != nil {
		return c.table.CreateIfNotExists(ctx)
	}
	if c.path == "" {
		return nil
	}
	if c.chosen {
		if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
			return err
		}
	}
	_, err := os.Stat(c.path)
	c.existed = err == nil
	if resume && !c.existed {
		fmt.Fprintf(e.stderr, "%s: --resume: no checkpoint in %s: starting from the beginning\n", op, c.path)
	}
	return nil
}

// end settles the checkpoint file when the run is over. A finished run
// removes the file the command chose, and so does a run that failed
// without doing anything a resumed run could go on from (a table that
// does not exist, say): idle, and no checkpoint before it. Otherwise the
// file is kept, and named on stderr.
func (c *checkpoint) end(ctx context.Context, e *env, op string, err error, complete, idle bool) {
	if c.path == "" {
		return
	}
	failed := err != nil && !errors.Is(err, transfer.ErrFailures) && (ctx.Err() == nil || !errors.Is(err, ctx.Err()))
	if finished(err, complete) || failed && idle && !c.existed {
		if c.chosen {
			os.Remove(c.path)
		}
		return
	}
	if _, err := os.Stat(c.path); err == nil {
		fmt.Fprintf(e.stderr, "%s: checkpoint kept in %s: run the same command with --resume to go on\n", op, c.path)
	}
}

// finished reports whether a run that returned err and complete is over:
// done, with or without entities that failed for reasons of their own.
func finished(err error, complete bool) bool {
	return complete && (err == nil || errors.Is(err, transfer.ErrFailures))
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

// renamed are flags of earlier versions and their new names.
var renamed = map[string]string{"from": "partition-from", "to": "partition-to"}

// parse parses args, turning flag errors into usage errors. The flag set
// prints its usage only when asked (-h), not before an error.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		usage()
		return err
	}
	if err != nil {
		for old, now := range renamed {
			if strings.HasSuffix(err.Error(), "flag provided but not defined: -"+old) {
				return usagef("--%s was renamed --%s", old, now)
			}
		}
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
