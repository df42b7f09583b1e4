package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/sas"
)

// TestMain is in chaos_test.go: it also runs the command as a process of
// the CLI kill test.

// readSASURL returns a read-only SAS URL of the test account's table.
func readSASURL(t *testing.T, table string) string {
	t.Helper()
	signer, err := sas.NewSigner(testenv.ConnectionString(t))
	if err != nil {
		t.Fatal(err)
	}
	u, err := signer.TableURL(table, sas.Permissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// build compiles the command into a temporary folder of t.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tablekit")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cli runs the built command with the test account in the environment.
type cli struct {
	t     *testing.T
	bin   string
	cs    string
	dir   string
	cache string // the command's user cache folder ($XDG_CACHE_HOME); "": the user's
}

func newCLI(t *testing.T) *cli {
	return &cli{t: t, bin: build(t), cs: testenv.ConnectionString(t), dir: t.TempDir(), cache: t.TempDir()}
}

func (c *cli) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+c.cs)
	if c.cache != "" {
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+c.cache)
	}
	return cmd
}

// run runs args and returns stdout, stderr and the exit code.
func (c *cli) run(args ...string) (string, string, int) {
	c.t.Helper()
	cmd := c.cmd(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// mustRun runs args and fails the test unless the exit code is want.
func (c *cli) mustRun(want int, args ...string) (string, string) {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != want {
		c.t.Fatalf("tablekit %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out, errOut
}

func newTable(t *testing.T, acct *tablekit.Account) *tablekit.Table[tablekit.Entity] {
	t.Helper()
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func seed(t *testing.T, tbl *tablekit.Table[tablekit.Entity], es []tablekit.Entity) {
	t.Helper()
	if _, err := tbl.BulkWriter(nil).Upsert(context.Background(), es); err != nil {
		t.Fatal(err)
	}
}

func entities(parts, n int, prefix string) []tablekit.Entity {
	es := make([]tablekit.Entity, n)
	for i := range es {
		es[i] = tablekit.Entity{PartitionKey: fmt.Sprintf("%s%03d", prefix, i%parts), RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{
			"I": int64(i), "D": float64(i%3) / 2, "When": time.Unix(int64(i), 1234500).UTC(), "G": tablekit.GUID{byte(i)}, "B": []byte{byte(i)}, "S": "s'\"", "I32": int32(i), "T": i%2 == 0,
		}}
	}
	return es
}

// dump reads every entity of tbl as comparable text, with types.
func dump(t *testing.T, tbl *tablekit.Table[tablekit.Entity]) map[string]string {
	t.Helper()
	out := map[string]string{}
	for e, err := range tbl.Query(context.Background(), tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		props, _ := json.Marshal(typed(e.Properties))
		out[e.PartitionKey+"/"+e.RowKey] = string(props)
	}
	return out
}

func typed(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprintf("%T:%v", v, v)
	}
	return out
}

func sameDump(t *testing.T, want, got map[string]string) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%d entities, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
}

// TestCLIExportImport: export to a file, import into a fresh table: the
// same entities, with their types.
func TestCLIExportImport(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	src, dst := newTable(t, acct), newTable(t, acct)
	seed(t, src, entities(9, 900, "p"))
	file := filepath.Join(c.dir, "out.jsonl")
	_, errOut := c.mustRun(0, "export", "--table", src.Name(), "--out", file, "--concurrency", "4")
	if !strings.Contains(errOut, "export: 900 entities") || !strings.Contains(errOut, "(end)") {
		t.Errorf("export stderr:\n%s", errOut)
	}
	// A finished export leaves its output and nothing else.
	if left, _ := filepath.Glob(filepath.Join(c.dir, "*")); len(left) != 1 || left[0] != file {
		t.Errorf("the export left %q, want only %s", left, file)
	}
	if left, _ := filepath.Glob(filepath.Join(c.cache, "tablekit", "checkpoints", "*")); len(left) != 0 {
		t.Errorf("the export left checkpoints %q", left)
	}
	// stdout export equals the file's entities.
	out, _ := c.mustRun(0, "export", "--table", src.Name(), "--concurrency", "1", "--progress", "none")
	if n := strings.Count(out, "\n"); n != 902 {
		t.Errorf("stdout export has %d lines, want 902", n)
	}
	_, errOut = c.mustRun(0, "import", "--table", dst.Name(), "--in", file, "--mode", "replace")
	if !strings.Contains(errOut, "900 written, 0 failed") {
		t.Errorf("import stderr:\n%s", errOut)
	}
	sameDump(t, dump(t, src), dump(t, dst))

	// Insert into a table that has them: every entity fails, exit 4.
	_, errOut = c.mustRun(4, "import", "--table", dst.Name(), "--in", file, "--max-failures", "10")
	if !strings.Contains(errOut, "EntityAlreadyExists") {
		t.Errorf("failing import stderr:\n%s", errOut)
	}
	// Import from stdin into a new table.
	fresh := testenv.TableName(t)
	cmd := c.cmd("import", "--table", fresh, "--create")
	f, _ := os.Open(file)
	defer f.Close()
	cmd.Stdin = f
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("import from stdin: %v\n%s", err, out)
	}
	nt, _ := tablekit.OpenTable[tablekit.Entity](acct, fresh, nil)
	defer nt.DeleteTable(context.Background())
	sameDump(t, dump(t, src), dump(t, nt))
}

// TestCLICopy copies a key range between tables, and from a table SAS URL.
func TestCLICopy(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	src, dst := newTable(t, acct), newTable(t, acct)
	seed(t, src, entities(6, 600, "p"))
	_, errOut := c.mustRun(0, "copy", "--table", src.Name(), "--to-table", dst.Name(), "--partition-from", "p001", "--partition-to", "p003")
	if !strings.Contains(errOut, "200 read, 200 written, 0 failed") {
		t.Errorf("copy stderr:\n%s", errOut)
	}
	want := dump(t, src)
	for k := range want {
		if !strings.HasPrefix(k, "p001/") && !strings.HasPrefix(k, "p002/") {
			delete(want, k)
		}
	}
	sameDump(t, want, dump(t, dst))

	sasURL := readSASURL(t, src.Name())
	all := newTable(t, acct)
	c.mustRun(0, "copy", "--sas-url", sasURL, "--to-connection-string", c.cs, "--to-table", all.Name(), "--progress", "lines")
	sameDump(t, dump(t, src), dump(t, all))
}

// TestCLICount counts a scope and shows the cost; also from a SAS URL.
func TestCLICount(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	seed(t, tbl, entities(5, 550, "p"))
	out, _ := c.mustRun(0, "count", "--table", tbl.Name())
	if !strings.Contains(out, "entities: 550\npartitions: 5\n") || !strings.Contains(out, "cost: ") {
		t.Errorf("count:\n%s", out)
	}
	out, _ = c.mustRun(0, "count", "--table", tbl.Name(), "--partition", "p002", "--filter", "I32 lt 100")
	if !strings.Contains(out, "entities: 20\npartitions: 1\n") {
		t.Errorf("count of a partition:\n%s", out)
	}
	sasURL := readSASURL(t, tbl.Name())
	out, _ = c.mustRun(0, "count", "--sas-url", sasURL, "--older-than", "1h")
	if !strings.Contains(out, "entities: 0\n") {
		t.Errorf("count of entities older than 1h:\n%s", out)
	}
	// Bad usage is exit 2, with a message.
	_, errOut := c.mustRun(2, "count")
	if !strings.Contains(errOut, "--table is required") {
		t.Errorf("usage error:\n%s", errOut)
	}
	c.mustRun(2, "count", "--table", tbl.Name(), "--older-than", "yesterday")
	c.mustRun(2, "frobnicate")
}

// TestCLIPurgeDryRun shows the count and cost and deletes nothing; a purge
// without a scope is refused.
func TestCLIPurgeDryRun(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	seed(t, tbl, entities(3, 450, "p"))
	out, _ := c.mustRun(0, "purge", "--table", tbl.Name(), "--partition-from", "p001", "--dry-run")
	if !strings.Contains(out, "entities: 300\npartitions: 2\n") || !strings.Contains(out, "delete transactions: 4\n") {
		t.Errorf("dry run:\n%s", out)
	}
	if n := len(dump(t, tbl)); n != 450 {
		t.Errorf("dry run left %d entities, want 450", n)
	}
	_, errOut := c.mustRun(2, "purge", "--table", tbl.Name())
	if !strings.Contains(errOut, "--all") {
		t.Errorf("unscoped purge:\n%s", errOut)
	}
	out, _ = c.mustRun(0, "purge", "--table", tbl.Name(), "--partition", "p000", "--no-checkpoint")
	if !strings.Contains(out, "purge complete: 150 listed, 150 deleted") {
		t.Errorf("purge:\n%s", out)
	}
	if n := len(dump(t, tbl)); n != 300 {
		t.Errorf("%d entities left, want 300", n)
	}
}

// TestCLIPurgeKilledResumes: a purge killed with SIGKILL halfway resumes
// with --resume and finishes: nothing left in the scope, nothing outside
// it deleted.
func TestCLIPurgeKilledResumes(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	seed(t, tbl, entities(8, 16000, "p"))
	outside := append(entities(2, 200, "a"), entities(2, 200, "q")...)
	seed(t, tbl, outside)
	keep := dump(t, tbl)
	for k := range keep {
		if strings.HasPrefix(k, "p") {
			delete(keep, k)
		}
	}
	cp := filepath.Join(c.dir, "purge.checkpoint")
	args := []string{"purge", "--table", tbl.Name(), "--partition-from", "p", "--partition-to", "q", "--checkpoint", cp,
		"--checkpoint-every", "50ms", "--transactions", "1", "--concurrency", "2", "--page-size", "200"}
	cmd := c.cmd(args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once a checkpoint records some deletes.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(cp); err == nil {
			var s struct {
				Counts struct{ Written int64 }
			}
			if json.Unmarshal(b, &s) == nil && s.Counts.Written >= 2000 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no checkpoint with progress within 2 minutes; stderr:\n%s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("purge was not killed (it finished first: %v); make it slower\n%s", err, errOut.String())
	}
	left := dump(t, tbl)
	inScope := 0
	for k := range left {
		if strings.HasPrefix(k, "p") {
			inScope++
		}
	}
	if inScope == 0 || inScope == 16000 {
		t.Fatalf("after the kill %d of 16000 entities in scope are left, want some", inScope)
	}
	t.Logf("killed with %d of 16000 entities left", inScope)

	out, errText := c.mustRun(0, append(args, "--resume", "--transactions", "16")...)
	if !strings.Contains(out, "purge complete") {
		t.Errorf("resumed purge:\nstdout:\n%s\nstderr:\n%s", out, errText)
	}
	sameDump(t, keep, dump(t, tbl))
}

// killWhen starts args, waits until the checkpoint file cp records at
// least min entities in the count field ("written" or "read"), and kills
// the command with SIGKILL. It fails the test if the command finished
// first.
func (c *cli) killWhen(cp, field string, min int64, args ...string) {
	c.t.Helper()
	cmd := c.cmd(args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(cp); err == nil {
			var s struct{ Counts map[string]int64 }
			if json.Unmarshal(b, &s) == nil && s.Counts[field] >= min {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			c.t.Fatalf("no checkpoint with progress within 2 minutes; stderr:\n%s", errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		c.t.Fatalf("%s was not killed (it finished first: %v); make it slower\n%s", args[0], err, errOut.String())
	}
}

// TestCLIImportKilledResumes: an insert import killed with SIGKILL halfway
// resumes with --resume and finishes: the table then holds exactly the
// exported entities, none missing, none extra, none failed (the entities
// the killed run wrote after its last checkpoint are found stored).
func TestCLIImportKilledResumes(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	src, dst := newTable(t, acct), newTable(t, acct)
	seed(t, src, entities(8, 16000, "p"))
	file := filepath.Join(c.dir, "src.jsonl")
	c.mustRun(0, "export", "--table", src.Name(), "--out", file, "--progress", "none")
	cp := filepath.Join(c.dir, "import.checkpoint")
	args := []string{"import", "--table", dst.Name(), "--in", file, "--checkpoint", cp,
		"--checkpoint-every", "20ms", "--concurrency", "1", "--batch", "300"}
	c.killWhen(cp, "written", 3000, args...)
	n := len(dump(t, dst))
	if n == 0 || n == 16000 {
		t.Fatalf("after the kill %d of 16000 entities are written, want some", n)
	}
	t.Logf("killed with %d of 16000 entities written", n)

	_, errText := c.mustRun(0, append(args, "--resume", "--concurrency", "16")...)
	if !strings.Contains(errText, "16000 read, 16000 written, 0 failed") || !strings.Contains(errText, "resumed: ") {
		t.Errorf("resumed import:\n%s", errText)
	}
	sameDump(t, dump(t, src), dump(t, dst))
}

// TestCLICountKilledResumes: a count killed halfway resumes with --resume
// and reports what a count in one go reports.
func TestCLICountKilledResumes(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	seed(t, tbl, entities(7, 3000, "p"))
	whole, _ := c.mustRun(0, "count", "--table", tbl.Name(), "--no-checkpoint")
	if !strings.Contains(whole, "entities: 3000\npartitions: 7\n") {
		t.Fatalf("count:\n%s", whole)
	}
	cp := filepath.Join(c.dir, "count.checkpoint")
	args := []string{"count", "--table", tbl.Name(), "--checkpoint", cp, "--checkpoint-every", "20ms",
		"--page-size", "10", "--concurrency", "2", "--boundary", "p003"}
	c.killWhen(cp, "read", 600, args...)
	out, _ := c.mustRun(0, append(args, "--resume", "--page-size", "1000")...)
	if !strings.Contains(out, "entities: 3000\npartitions: 7\n") {
		t.Errorf("resumed count:\n%s", out)
	}
	// Without --resume a count starts again; --resume with no checkpoint
	// file starts from the beginning.
	out, _ = c.mustRun(0, "count", "--table", tbl.Name(), "--checkpoint", filepath.Join(c.dir, "none"), "--resume")
	if !strings.Contains(out, "entities: 3000\n") {
		t.Errorf("count with --resume and no checkpoint:\n%s", out)
	}
}

// TestCLIOlderThanResumes: --older-than with --resume reads the scope of
// the checkpoint: the cutoff the first run fixed, not one taken from the
// clock again (which made every resume fail with "it is for scope ...").
// The README's example: purge --older-than with a budget, then --resume.
// An entity written after the first run started is out of its scope and
// survives the resumed purge; a resume with another --older-than is
// refused.
func TestCLIOlderThanResumes(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	tbl, dst := newTable(t, acct), newTable(t, acct)
	old := entities(3, 300, "p")
	seed(t, tbl, old)
	time.Sleep(1100 * time.Millisecond) // Azurite compares DateTimes to the millisecond
	scope := []string{"--table", tbl.Name(), "--older-than", "1s", "--progress", "none"}

	// A finished export, count and copy resume as finished.
	file := filepath.Join(c.dir, "old.jsonl")
	c.mustRun(0, append([]string{"export", "--out", file}, scope...)...)
	c.mustRun(0, append([]string{"export", "--out", file, "--resume"}, scope...)...)
	if b, err := os.ReadFile(file); err != nil || strings.Count(string(b), "\n") != 302 {
		t.Errorf("resumed export: %d lines (%v), want 302", strings.Count(string(b), "\n"), err)
	}
	cp := filepath.Join(c.dir, "count.checkpoint")
	c.mustRun(0, append([]string{"count", "--checkpoint", cp}, scope...)...)
	out, _ := c.mustRun(0, append([]string{"count", "--checkpoint", cp, "--resume"}, scope...)...)
	if !strings.Contains(out, "entities: 300\n") {
		t.Errorf("resumed count:\n%s", out)
	}
	cp = filepath.Join(c.dir, "copy.checkpoint")
	c.mustRun(0, append([]string{"copy", "--to-table", dst.Name(), "--checkpoint", cp}, scope...)...)
	c.mustRun(0, append([]string{"copy", "--to-table", dst.Name(), "--checkpoint", cp, "--resume"}, scope...)...)

	// A purge stopped by its budget before it listed anything.
	cp = filepath.Join(c.dir, "purge.checkpoint")
	purge := append([]string{"purge", "--checkpoint", cp}, scope...)
	c.mustRun(3, append(purge, "--budget", "1ns")...)
	// Written after the first run started: out of its scope, although
	// older than 1s when the purge resumes.
	late := []tablekit.Entity{{PartitionKey: "p000", RowKey: "late"}}
	seed(t, tbl, late)
	time.Sleep(1100 * time.Millisecond)
	_, errOut := c.mustRun(1, "purge", "--checkpoint", cp, "--table", tbl.Name(), "--older-than", "2s", "--resume")
	if !strings.Contains(errOut, "checkpoint cannot be used") {
		t.Errorf("resume with another --older-than:\n%s", errOut)
	}
	out, _ = c.mustRun(0, append(purge, "--resume")...)
	if !strings.Contains(out, "purge complete: 300 listed, 300 deleted") {
		t.Errorf("resumed purge:\n%s", out)
	}
	left := dump(t, tbl)
	if _, ok := left["p000/late"]; len(left) != 1 || !ok {
		t.Errorf("left %v, want only p000/late", left)
	}
}

// TestCLICopyKilledBeforeCheckpointResumes: an insert copy killed with
// SIGKILL before its first periodic checkpoint resumes with --resume as a
// resumed copy: the entities it wrote are found stored, none fails, and
// the destination ends equal to the source. (The copy saved nothing
// before its first write, so the resumed run started afresh and every
// entity the killed run had copied failed with EntityAlreadyExists.)
func TestCLICopyKilledBeforeCheckpointResumes(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	src, dst := newTable(t, acct), newTable(t, acct)
	// 8 partitions of 2,000; of 500 on Cosmos DB (the front reads a
	// query's whole result for each page it answers, and the copy is
	// slower there, so that a kill still comes in the middle).
	cosmos := testenv.Service() == tablekit.ServiceCosmosDB
	total, part := 16000, 2000
	if cosmos {
		total, part = 4000, 500
	}
	seed(t, src, entities(8, total, "p"))
	cp := filepath.Join(c.dir, "copy.checkpoint")
	args := []string{"copy", "--table", src.Name(), "--to-table", dst.Name(), "--mode", "insert", "--checkpoint", cp,
		"--checkpoint-every", "1h", "--concurrency", "1", "--page-size", "100", "--progress", "none"}
	cmd := c.cmd(args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once it has copied the first partition (one range, read in
	// key order: p000 comes first; on Cosmos DB, in no order: once a
	// partition's worth of entities is there).
	copied := func() bool {
		if cosmos {
			n, err := dst.Count(context.Background(), tablekit.Filter{})
			return err == nil && n >= part
		}
		_, err := dst.Get(context.Background(), "p001", "000001")
		return err == nil
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if copied() {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("nothing of p001 copied within 2 minutes; stderr:\n%s", errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("copy was not killed (it finished first: %v); make it slower\n%s", err, errOut.String())
	}
	n := len(dump(t, dst))
	if n < part || n == total {
		t.Fatalf("after the kill %d of %d entities are copied, want some", n, total)
	}
	t.Logf("killed with %d of %d entities copied", n, total)

	_, errText := c.mustRun(0, append(args, "--resume", "--concurrency", "4")...)
	if !strings.Contains(errText, fmt.Sprintf("%d read, %d written, 0 failed", total, total)) || !strings.Contains(errText, "resumed: ") {
		t.Errorf("resumed copy:\n%s", errText)
	}
	sameDump(t, dump(t, src), dump(t, dst))
}

// TestCLINumericFlagsOutOfRange: every numeric flag out of its range is a
// usage error (exit 2) that says the range, before anything is sent, and
// never a crash. A Go program that dies of a fatal runtime error exits 2
// too, so the test checks the message: `import --batch 1000000000` died
// of a fatal out-of-memory error.
func TestCLINumericFlagsOutOfRange(t *testing.T) {
	c := newCLI(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	file := filepath.Join(c.dir, "in.jsonl")
	if err := os.WriteFile(file, []byte(`{"tablekit":"export","version":1,"table":"x","created":"2024-01-01T00:00:00Z"}`+"\n"+`{"tablekit":"end","entities":0}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	table := []string{"--table", tbl.Name()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--in", file, "--batch", "1000000000"}, "--batch 1000000000 is out of range: it must be from 1 to 100000"},
		{[]string{"import", "--in", file, "--batch", "0"}, "--batch 0 is out of range"},
		{[]string{"import", "--in", file, "--concurrency", "100000000"}, "--concurrency 100000000 is out of range: it must be from 1 to 1024"},
		{[]string{"import", "--in", file, "--max-failures", "-1"}, "--max-failures -1 is out of range"},
		{[]string{"import", "--in", file, "--checkpoint-every", "0s"}, "--checkpoint-every 0s is out of range: it must be at least 10ms"},
		{[]string{"export", "--concurrency", "1000000000"}, "--concurrency 1000000000 is out of range: it must be from 1 to 1024"},
		{[]string{"export", "--concurrency", "0"}, "--concurrency 0 is out of range"},
		{[]string{"export", "--concurrency", "99999999999999999999"}, "out of range"},
		{[]string{"count", "--page-size", "1001"}, "--page-size 1001 is out of range: it must be from 1 to 1000"},
		{[]string{"count", "--max-probes", "-2"}, "--max-probes -2 is out of range: it must be from -1 to 1000000"},
		{[]string{"copy", "--to-table", "x", "--max-probes", "9223372036854775807"}, "--max-probes 9223372036854775807 is out of range"},
		{[]string{"purge", "--all", "--transactions", "1000000000"}, "--transactions 1000000000 is out of range: it must be from 1 to 1024"},
		{[]string{"purge", "--all", "--transactions", "0"}, "--transactions 0 is out of range"},
		{[]string{"purge", "--all", "--budget", "-1s"}, "--budget -1s is out of range: it must be at least 0s"},
		{[]string{"purge", "--all", "--checkpoint-every", "1ns"}, "--checkpoint-every 1ns is out of range"},
	} {
		args := append(append(tc.args[:1:1], table...), tc.args[1:]...)
		_, errOut := c.mustRun(2, args...)
		if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "Run 'tablekit help") || strings.Contains(errOut, "fatal error") || strings.Contains(errOut, "goroutine ") {
			t.Errorf("tablekit %s:\n%s\nwant a usage error saying %q", strings.Join(args, " "), errOut, tc.want)
		}
	}
	if n := len(dump(t, tbl)); n != 0 {
		t.Errorf("the refused commands wrote %d entities", n)
	}
}
