package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// A user's first day with the command (issue 39): each test runs the
// command in this process, as main does, with one Meter in every Account
// it opens, and checks the exit code, the storage transactions it spent
// and the files it left behind.

// inproc runs the command in this process, in a working folder and a user
// cache folder of the test's own.
type inproc struct {
	t     *testing.T
	cs    string
	dir   string // the working folder
	cache string // the user cache folder: default checkpoints go there
}

// newInproc returns a runner for t. It changes the working folder and
// $XDG_CACHE_HOME for the test (so t must not be parallel), after the test
// account is up: Azurite's own cache folder is resolved before.
func newInproc(t *testing.T) *inproc {
	t.Helper()
	cs := testenv.ConnectionString(t)
	c := &inproc{t: t, cs: cs, dir: t.TempDir(), cache: t.TempDir()}
	t.Chdir(c.dir)
	t.Setenv("XDG_CACHE_HOME", c.cache)
	return c
}

// runResult is what a run of the command gave.
type runResult struct {
	stdout, stderr string
	code           int
	tx             int64 // storage transactions, as the Meter counts them
}

// run runs args with stdin (nil: none) and returns what it gave.
func (c *inproc) run(stdin io.Reader, args ...string) runResult {
	c.t.Helper()
	return c.runCtx(context.Background(), nil, stdin, args...)
}

// runCtx runs args in ctx with stdin, with policy (nil: none) in every
// Account's pipeline.
func (c *inproc) runCtx(ctx context.Context, pol policy.Policy, stdin io.Reader, args ...string) runResult {
	c.t.Helper()
	meter := new(tablekit.Meter)
	var stdout, stderr bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	e := &env{stdin: stdin, stdout: &stdout, stderr: &stderr,
		getenv: func(k string) string {
			if k == "AZURE_STORAGE_CONNECTION_STRING" {
				return c.cs
			}
			return os.Getenv(k)
		},
		open: func(cs string, opts *tablekit.Options) (*tablekit.Account, error) {
			var o tablekit.Options
			if opts != nil {
				o = *opts
			}
			o.Meter = meter
			if pol != nil {
				o.PerRetryPolicies = append(o.PerRetryPolicies, pol)
			}
			return tablekit.Open(cs, &o)
		}}
	code := run(ctx, e, args)
	return runResult{stdout: stdout.String(), stderr: stderr.String(), code: code, tx: meter.Snapshot().Total()}
}

// mustRun runs args and fails the test unless the exit code is want.
func (c *inproc) mustRun(want int, args ...string) runResult {
	c.t.Helper()
	r := c.run(nil, args...)
	if r.code != want {
		c.t.Fatalf("tablekit %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// files lists the files under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == dir {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// checkpoints lists the files of the default checkpoint folder.
func (c *inproc) checkpoints() []string {
	return files(c.t, filepath.Join(c.cache, "tablekit", "checkpoints"))
}

// left fails the test unless the working folder holds exactly want and
// the checkpoint folder nothing.
func (c *inproc) left(what string, want ...string) {
	c.t.Helper()
	slices.Sort(want)
	if got := files(c.t, c.dir); !slices.Equal(got, want) {
		c.t.Errorf("%s left %q in the working folder, want %q", what, got, want)
	}
	if got := c.checkpoints(); len(got) != 0 {
		c.t.Errorf("%s left checkpoints %q", what, got)
	}
}

func newTestTable(t *testing.T, acct *tablekit.Account) *tablekit.Table[tablekit.Entity] {
	t.Helper()
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func load(t *testing.T, tbl *tablekit.Table[tablekit.Entity], es []tablekit.Entity) {
	t.Helper()
	if _, err := tbl.BulkWriter(nil).Upsert(context.Background(), es); err != nil {
		t.Fatal(err)
	}
}

// TestCLIMissingTable: import and copy into a table that does not exist,
// without --create, find it with one request before any data moves and
// fail (exit 1), leaving nothing behind. (Every batch was sent and failed
// with TableNotFound, 200 and 146 transactions, then exit 3 with "run
// again with --resume".) An export of a table that does not exist fails
// and leaves no output, and an earlier output as it was (it left a 0-byte
// file). count and purge fail as plainly.
func TestCLIMissingTable(t *testing.T) {
	c := newInproc(t)
	acct := testenv.Account(t, nil)
	src := newTestTable(t, acct)
	es := make([]tablekit.Entity, 2000)
	for i := range es {
		es[i] = chaosEntity(20, i, false)
	}
	load(t, src, es)
	file := filepath.Join(c.dir, "src.jsonl")
	c.mustRun(0, "export", "--table", src.Name(), "--out", file, "--progress", "none")
	missing := testenv.TableName(t)

	r := c.mustRun(1, "import", "--table", missing, "--in", file, "--batch", "100", "--concurrency", "1")
	if r.tx != 1 || !strings.Contains(r.stderr, "does not exist") || !strings.Contains(r.stderr, "--create") {
		t.Errorf("import into a missing table: %d transactions, stderr:\n%s\nwant 1 transaction and a message naming --create", r.tx, r.stderr)
	}
	c.left("import into a missing table", "src.jsonl")

	r = c.mustRun(1, "copy", "--table", src.Name(), "--to-table", missing, "--page-size", "100")
	if r.tx != 1 || !strings.Contains(r.stderr, "does not exist") || !strings.Contains(r.stderr, "--create") {
		t.Errorf("copy into a missing table: %d transactions, stderr:\n%s\nwant 1 transaction and a message naming --create", r.tx, r.stderr)
	}
	c.left("copy into a missing table", "src.jsonl")

	out := filepath.Join(c.dir, "missing.jsonl")
	r = c.mustRun(1, "export", "--table", missing, "--out", out)
	if r.tx != 1 {
		t.Errorf("export of a missing table: %d transactions, want 1", r.tx)
	}
	c.left("export of a missing table", "src.jsonl")
	// An earlier export is left as it was.
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c.mustRun(1, "export", "--table", missing, "--out", file)
	if after, err := os.ReadFile(file); err != nil || !bytes.Equal(before, after) {
		t.Errorf("a failed export changed the earlier export at its path (%d bytes, was %d; %v)", len(after), len(before), err)
	}
	c.left("export of a missing table over an earlier export", "src.jsonl")

	for _, args := range [][]string{{"count"}, {"purge", "--all"}, {"purge", "--all", "--dry-run"}} {
		r = c.mustRun(1, append(args, "--table", missing)...)
		if r.tx != 1 {
			t.Errorf("%s of a missing table: %d transactions, want 1", args[0], r.tx)
		}
		c.left(strings.Join(args, " ")+" of a missing table", "src.jsonl")
	}

	// With --create, the import creates the table and writes: one
	// transaction per partition of 100 entities, and the CreateTable.
	r = c.mustRun(0, "import", "--table", missing, "--in", file, "--create", "--progress", "none")
	dst, err := tablekit.OpenTable[tablekit.Entity](acct, missing, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.DeleteTable(context.Background()) })
	if r.tx != 1+20 {
		t.Errorf("import with --create: %d transactions, want 21 (CreateTable and 20 transactions of 100)", r.tx)
	}
	sameEntities(t, "imported", typed(t, src), typed(t, dst))
	c.left("import with --create", "src.jsonl")
}

// stopAt is a pipeline policy that cancels a run when it sends its n-th
// query, before sending it.
type stopAt struct {
	n      int32
	seen   atomic.Int32
	cancel context.CancelFunc
}

func (p *stopAt) Do(r *policy.Request) (*http.Response, error) {
	if r.Raw().Method == http.MethodGet && p.seen.Add(1) == p.n {
		p.cancel()
		return nil, context.Canceled
	}
	return r.Next()
}

// TestCLIExportStoppedKeepsEarlierFile: an export stopped before the end
// (interrupted: exit 3) leaves the earlier export at its path as it was,
// and keeps what it wrote as FILE.partial with its checkpoint, both named
// on stderr; the same command with --resume goes on from them and, once
// complete, renames FILE.partial to FILE and removes the checkpoint. (An
// export wrote FILE itself from its first byte.)
func TestCLIExportStoppedKeepsEarlierFile(t *testing.T) {
	c := newInproc(t)
	acct := testenv.Account(t, nil)
	src := newTestTable(t, acct)
	es := make([]tablekit.Entity, 1000)
	for i := range es {
		es[i] = chaosEntity(10, i, false)
	}
	load(t, src, es)
	file := filepath.Join(c.dir, "out.jsonl")
	if err := os.WriteFile(file, []byte("the earlier export\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"export", "--table", src.Name(), "--out", file, "--page-size", "100", "--concurrency", "1", "--max-probes", "-1",
		"--checkpoint-every", "10ms", "--progress", "none"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := c.runCtx(ctx, &stopAt{n: 6, cancel: cancel}, nil, args...)
	if r.code != exitIncomplete || r.tx != 5 {
		t.Fatalf("stopped export: exit %d, %d transactions, want 3 and 5\n%s", r.code, r.tx, r.stderr)
	}
	if got := mustRead(t, file); got != "the earlier export\n" {
		t.Errorf("the stopped export changed the earlier export: %q", got)
	}
	kept := c.checkpoints()
	if len(kept) != 1 || !strings.Contains(r.stderr, "unfinished export kept in "+file+".partial") || !strings.Contains(r.stderr, "checkpoint kept in ") {
		t.Errorf("stopped export: checkpoints %q, stderr:\n%s", kept, r.stderr)
	}
	if got := files(t, c.dir); !slices.Equal(got, []string{"out.jsonl", "out.jsonl.partial"}) {
		t.Errorf("the stopped export left %q", got)
	}
	r = c.mustRun(0, append(args, "--resume")...)
	// Behind a front that pages as Azure does (pages cut short), the pages
	// after the 4 read take more requests than their entities fill: there
	// the lines alone show the resume read nothing twice.
	if n := strings.Count(mustRead(t, file), "\n"); n != 1002 || (r.tx > 11-4 && !testenv.PagesAsAzure()) {
		t.Errorf("resumed export: %d lines (want 1002), %d transactions (want at most 7: the pages after the 4 read)", n, r.tx)
	}
	c.left("resumed export", "out.jsonl")
}

// TestCLIFinishedRunsLeaveNoCheckpoint: runs that finish leave no
// checkpoint behind, in the working folder or elsewhere (6 were left in
// the working folder). A run that stops before the end keeps its
// checkpoint in the user cache folder, says where, and the same command
// with --resume finds it, goes on and removes it when it finishes. A
// checkpoint named with --checkpoint is the user's: it is kept.
func TestCLIFinishedRunsLeaveNoCheckpoint(t *testing.T) {
	c := newInproc(t)
	acct := testenv.Account(t, nil)
	src, dst := newTestTable(t, acct), newTestTable(t, acct)
	es := make([]tablekit.Entity, 1000)
	for i := range es {
		es[i] = chaosEntity(10, i, false)
	}
	load(t, src, es)
	file := filepath.Join(c.dir, "out.jsonl")
	for _, args := range [][]string{
		{"export", "--table", src.Name(), "--out", file},
		{"import", "--table", dst.Name(), "--in", file, "--mode", "replace"},
		{"copy", "--table", src.Name(), "--to-table", dst.Name()},
		{"count", "--table", src.Name()},
		{"purge", "--table", dst.Name(), "--partition", "p02"},
	} {
		r := c.mustRun(0, append(args, "--progress", "lines")...)
		if strings.Contains(r.stderr, "checkpoint kept") {
			t.Errorf("%s says it kept a checkpoint:\n%s", args[0], r.stderr)
		}
		c.left(args[0], "out.jsonl")
	}
	if n := strings.Count(mustRead(t, file), "\n"); n != 1002 {
		t.Errorf("the export has %d lines, want 1002", n)
	}

	// Stopped by its budget: the checkpoint is kept where it says.
	purge := []string{"purge", "--table", src.Name(), "--partition-from", "p03", "--progress", "none"}
	r := c.mustRun(3, append(purge, "--budget", "1ns")...)
	kept := c.checkpoints()
	if len(kept) != 1 || !strings.Contains(r.stderr, "checkpoint kept in "+filepath.Join(c.cache, "tablekit", "checkpoints", kept[0])) {
		t.Fatalf("stopped purge: checkpoints %q, stderr:\n%s\nwant one, named on stderr", kept, r.stderr)
	}
	// Another job (another scope) does not take it.
	c.mustRun(0, "count", "--table", src.Name(), "--partition-from", "p05", "--resume")
	if got := c.checkpoints(); !slices.Equal(got, kept) {
		t.Errorf("after a count, checkpoints %q, want %q", got, kept)
	}
	r = c.mustRun(0, append(purge, "--resume")...)
	if !strings.Contains(r.stdout, "purge complete: 700 listed, 700 deleted") {
		t.Errorf("resumed purge:\n%s%s", r.stdout, r.stderr)
	}
	c.left("resumed purge", "out.jsonl")

	// Asked for, a checkpoint is kept.
	named := filepath.Join(c.dir, "count.checkpoint")
	c.mustRun(0, "count", "--table", src.Name(), "--checkpoint", named)
	c.left("count --checkpoint", "out.jsonl", "count.checkpoint")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCLICountCost: count of 20,000 entities in 200 partitions costs no
// more transactions than one keys-only pass over them (it cost 132, 98 of
// them key probes), and so does purge --dry-run; neither writes anything
// nor leaves a file. Their progress lines say what they do: a count
// counts ("written 0" was there), a dry-run purge is labelled as such
// (it was "count:").
func TestCLICountCost(t *testing.T) {
	c := newInproc(t)
	acct := testenv.Account(t, nil)
	tbl := newTestTable(t, acct)
	start := time.Now()
	es := make([]tablekit.Entity, 20000)
	for i := range es {
		es[i] = tablekit.Entity{PartitionKey: fmt.Sprintf("tenant-%03d", i%200), RowKey: fmt.Sprintf("%08d", i), Properties: map[string]any{"N": int64(i)}}
	}
	load(t, tbl, es)
	t.Logf("loaded 20,000 entities in %v", time.Since(start).Round(time.Millisecond))

	// One keys-only pass: pages of 1,000, one range.
	before := acct.Meter().Snapshot()
	opts := &tablekit.QueryOptions{PageSize: 1000, Select: []string{"PartitionKey", "RowKey"}, AllowTableScan: true}
	for {
		page, err := tbl.QueryPage(context.Background(), tablekit.Filter{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	pass := acct.Meter().Snapshot().Sub(before).Total()

	r := c.mustRun(0, "count", "--table", tbl.Name(), "--progress", "lines")
	t.Logf("count: %d transactions; one keys-only pass: %d\n%s", r.tx, pass, r.stdout)
	if !strings.Contains(r.stdout, "entities: 20000\npartitions: 200\n") || !strings.Contains(r.stdout, fmt.Sprintf("cost: %d transactions", r.tx)) {
		t.Errorf("count:\n%s", r.stdout)
	}
	if r.tx > pass {
		t.Errorf("count cost %d transactions, more than one keys-only pass (%d)", r.tx, pass)
	}
	if !strings.Contains(r.stderr, "count: counted 20000") || strings.Contains(r.stderr, "written") {
		t.Errorf("count progress:\n%s", r.stderr)
	}
	r = c.mustRun(0, "purge", "--table", tbl.Name(), "--all", "--dry-run", "--progress", "lines")
	if r.tx > pass || !strings.Contains(r.stdout, "entities: 20000\npartitions: 200\n") || !strings.Contains(r.stdout, "delete transactions: 200\n") {
		t.Errorf("purge --dry-run: %d transactions (one pass: %d):\n%s", r.tx, pass, r.stdout)
	}
	if !strings.Contains(r.stderr, "purge --dry-run: counted 20000") || strings.Contains(r.stderr, "count:") {
		t.Errorf("purge --dry-run progress:\n%s", r.stderr)
	}
	c.left("count")
	t.Logf("whole test: %v", time.Since(start).Round(time.Millisecond))
}

// TestCLICopyInsertResumesIdentical: a copy in insert mode whose first run
// was killed before it kept a checkpoint (its saves lost), run again with
// --resume, counts the entities the first run had copied exactly (EDM
// types included) as written, not failed (it reported an
// EntityAlreadyExists for each); an entity stored with other values is
// still a failure (exit 4).
func TestCLICopyInsertResumesIdentical(t *testing.T) {
	c := newInproc(t)
	acct := testenv.Account(t, nil)
	src, dst := newTestTable(t, acct), newTestTable(t, acct)
	es := make([]tablekit.Entity, 2000)
	for i := range es {
		es[i] = chaosEntity(8, i, false)
	}
	load(t, src, es)
	// What the lost first run copied: 1,000 entities, as the source has
	// them, and one that differs (an Int32 where the source has Int64).
	copied := append([]tablekit.Entity(nil), es[:1000]...)
	other := es[1000]
	other.Properties = map[string]any{}
	for k, v := range es[1000].Properties {
		other.Properties[k] = v
	}
	other.Properties["I64"] = int32(7)
	load(t, dst, append(copied, other))
	want := typed(t, src)
	want[other.PartitionKey+"/"+other.RowKey] = typedText(other)

	r := c.mustRun(4, "copy", "--table", src.Name(), "--to-table", dst.Name(), "--mode", "insert", "--resume", "--progress", "none")
	if !strings.Contains(r.stderr, "2000 read, 1999 written, 1 failed") || !strings.Contains(r.stderr, "resumed: 1000 entities found already written") ||
		strings.Count(r.stderr, "copy: \"") != 1 || !strings.Contains(r.stderr, fmt.Sprintf("copy: %q/%q: ", other.PartitionKey, other.RowKey)) {
		t.Errorf("resumed copy:\n%s", r.stderr)
	}
	// The existence check, then what the copy reports.
	if reported := reportedTransactions(t, r.stderr, "copy: "); r.tx != reported+1 {
		t.Errorf("the copy spent %d transactions, reported %d (+1 for the existence check)", r.tx, reported)
	}
	sameEntities(t, "destination", want, typed(t, dst))
	c.left("resumed copy")
}

// reportedTransactions returns the transactions a command's summary line
// (starting with prefix) reports.
func reportedTransactions(t *testing.T, stderr, prefix string) int64 {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, prefix) || !strings.Contains(l, " transactions, ") {
			continue
		}
		fields := strings.Split(l, ", ")
		for _, f := range fields {
			var n int64
			if _, err := fmt.Sscanf(f, "%d transactions", &n); err == nil {
				return n
			}
		}
	}
	t.Fatalf("no summary line with transactions in:\n%s", stderr)
	return 0
}

// TestCLIUsageErrors: every command line the command cannot run is a
// usage error, exit 2, with the error first and nothing sent: a bad table
// name (it exited 1), an unknown flag (41 lines of usage came before the
// error), a renamed flag (--to, the end of a key range, read like the
// destination of copy).
func TestCLIUsageErrors(t *testing.T) {
	c := newInproc(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"count", "--table", "bad_name!"}, "--table: "},
		{[]string{"copy", "--table", "Orders", "--to-table", "9lives"}, "--to-table: "},
		{[]string{"import", "--table", "Orders", "--checkpoint-table", "no-dashes"}, "--checkpoint-table: "},
		{[]string{"count", "--table", "Orders", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"export", "--table", "Orders", "--from", "a", "--to", "b"}, "--from was renamed --partition-from"},
		{[]string{"copy", "--table", "Orders", "--to-table", "Copy", "--to", "b"}, "--to was renamed --partition-to"},
		{[]string{"count", "--connection-string", "AccountName=x;Nonsense=1", "--table", "Orders"}, "--connection-string: "},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"conformance", "--sas-url", "https://acct.table.core.windows.net/Orders?sv=x&sig=y"}, "--sas-url: "},
	} {
		r := c.run(nil, tc.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || r.tx != 0 || !strings.Contains(lines[0], tc.want) || len(lines) > 2 || strings.Contains(r.stderr, "Usage:") {
			t.Errorf("tablekit %s: exit %d, %d transactions, stderr:\n%s\nwant exit 2, nothing sent, the error %q first and no usage",
				strings.Join(tc.args, " "), r.code, r.tx, r.stderr, tc.want)
		}
	}
	// Help is asked for: usage, exit 0.
	if r := c.run(nil, "count", "-h"); r.code != exitOK || !strings.Contains(r.stderr, "Usage: tablekit count") || !strings.Contains(r.stderr, "-partition-to") {
		t.Errorf("count -h: exit %d\n%s", r.code, r.stderr)
	}
	c.left("usage errors")
}
