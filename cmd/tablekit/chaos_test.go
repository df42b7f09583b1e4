package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// The CLI kill test: the tablekit command itself, run as a separate
// process, is killed with SIGKILL again and again and run again with
// --resume and the same command line, with faults injected into its own
// requests, until it finishes; the end state must be what one
// uninterrupted run gives.
//
// The process is this test binary, re-executed with chaosProcessEnv set:
// TestMain then runs the command (run, as main does) with a seeded fault
// injector (internal/testkit/chaos) in every Account it opens, instead of the
// tests. Nothing in the shipped command can turn faults on: the hook is
// env.open, which only this file sets.

// chaosProcessEnv holds a command process's configuration (JSON
// chaosProcessConfig). Set, TestMain runs the command instead of the tests.
const chaosProcessEnv = "TABLEKIT_CLI_CHAOS"

// chaosProcessConfig is what a command process is told.
type chaosProcessConfig struct {
	Seed   int64  // seed of its fault injector
	Cosmos bool   // its tables are on Cosmos DB (tablekit.ServiceCosmosDB)
	Stats  string // file it writes its injector's counts to, every 10 ms
}

// processStats are a command process's fault counts.
type processStats struct {
	Eligible, Faults int64
	ByKind           map[chaos.Kind]int64
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(chaosProcessEnv); cfg != "" {
		os.Exit(chaosProcess(cfg, os.Args[1:]))
	}
	testenv.Main(m)
}

// chaosProcess runs the command line args as main does, with faults, and
// returns its exit code.
func chaosProcess(cfgJSON string, args []string) int {
	var cfg chaosProcessConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chaos process:", err)
		return exitFailed
	}
	inj, err := chaos.New(cfg.Seed, chaosFaults())
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos process:", err)
		return exitFailed
	}
	report := func() {
		st := inj.Stats()
		r := processStats{Eligible: st.Eligible("", ""), Faults: st.Faults(), ByKind: map[chaos.Kind]int64{}}
		for _, k := range chaos.Kinds() {
			r.ByKind[k] = st.Count(k, "", "")
		}
		data, _ := json.Marshal(r)
		if os.WriteFile(cfg.Stats+".tmp", data, 0o600) == nil {
			os.Rename(cfg.Stats+".tmp", cfg.Stats)
		}
	}
	stop := make(chan struct{})
	var reports sync.WaitGroup
	reports.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				report()
			case <-stop:
				return
			}
		}
	})
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		open: func(cs string, opts *tablekit.Options) (*tablekit.Account, error) {
			var o tablekit.Options
			if opts != nil {
				o = *opts
			}
			if cfg.Cosmos {
				o.Service = tablekit.ServiceCosmosDB
			}
			return inj.Open(cs, &o)
		}}
	code := run(ctx, e, args)
	close(stop)
	reports.Wait()
	report()
	return code
}

// chaosFaults is the fault mix of the command processes: 25% of tries
// fail, another 12.5% are delayed (see chaos.Mixed).
func chaosFaults() *chaos.Config { return chaos.Mixed(0.25) }

// ---- The proxy that kills

// killPlan says when a run of the command is killed: once its checkpoint
// records progress entities or more (read, written or listed), it is
// armed; then it is killed at once (wherever the process is), or at its
// at-th request from then (counted by the proxy), before the request
// reaches the service or after the service applied it (its answer dies
// with the process), or after the first empty page from there on (or 8
// requests later, if none comes).
type killPlan struct {
	progress   int64
	now        bool
	at         int64
	applied    bool
	afterEmpty bool
}

func (p killPlan) String() string {
	when := fmt.Sprintf("at %d entities", p.progress)
	switch {
	case p.now:
		return when
	case p.afterEmpty:
		return fmt.Sprintf("%s, after an empty page from request %d on", when, p.at)
	case p.applied:
		return fmt.Sprintf("%s, after request %d was applied", when, p.at)
	}
	return fmt.Sprintf("%s, before request %d", when, p.at)
}

// victim is the command process the proxy serves now.
type victim struct {
	plan   *killPlan // nil: not to be killed
	armed  atomic.Bool
	n      atomic.Int64 // requests since armed
	fired  atomic.Bool
	kill   func()
	killed chan struct{} // closed once the kill was sent
}

func (v *victim) fire() {
	if v.fired.CompareAndSwap(false, true) {
		v.kill()
		close(v.killed)
	}
}

// killProxy forwards the command's table requests to the front and kills
// the command as its plan says.
type killProxy struct {
	target *url.URL
	client *http.Client
	cur    atomic.Pointer[victim]
}

func (p *killProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := p.cur.Load()
	if v != nil && v.fired.Load() {
		panic(http.ErrAbortHandler) // the process is dead
	}
	var n int64
	armed := v != nil && v.plan != nil && !v.plan.now && v.armed.Load()
	if armed {
		n = v.n.Add(1)
		if !v.plan.applied && !v.plan.afterEmpty && n == v.plan.at {
			v.fire()
			panic(http.ErrAbortHandler)
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	u := *p.target
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	for k, vs := range r.Header {
		out.Header[k] = vs
	}
	out.Host = r.Host
	resp, err := p.client.Do(out)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if armed && (v.plan.applied && n == v.plan.at ||
		v.plan.afterEmpty && (n >= v.plan.at && emptyPage(r, resp, data) || n == v.plan.at+8)) {
		v.fire()
		panic(http.ErrAbortHandler)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(data)
}

// emptyPage reports whether an answer is a query page with no entity and
// a continuation token.
func emptyPage(r *http.Request, resp *http.Response, body []byte) bool {
	if r.Method != http.MethodGet || resp.StatusCode != http.StatusOK || resp.Header.Get("x-ms-continuation-NextPartitionKey") == "" {
		return false
	}
	var doc struct{ Value []json.RawMessage }
	return json.Unmarshal(body, &doc) == nil && len(doc.Value) == 0
}

// ---- Running the command

// cliChaos runs the command processes of one seed.
type cliChaos struct {
	t      *testing.T
	seed   int64
	cs     string // the command's connection string: through the proxy
	cosmos bool
	proxy  *killProxy
	dir    string
	rng    *rand.Rand

	serial         int
	stats          []string // the processes' stats files
	kills, resumes int      // SIGKILLs, and runs again after exit 3
	processes      int
}

// result is what one run of the command did.
type result struct {
	stdout, stderr string
	code           int // -1 when killed
}

// once runs the command line args, killed as plan says (nil: not), and
// returns what it did. progress reads the progress its checkpoint records.
func (c *cliChaos) once(args []string, plan *killPlan, progress func() int64) result {
	c.t.Helper()
	stats := filepath.Join(c.dir, fmt.Sprintf("process-%d.json", c.serial))
	cfg, err := json.Marshal(chaosProcessConfig{Seed: c.seed*1000 + int64(c.serial), Cosmos: c.cosmos, Stats: stats})
	if err != nil {
		c.t.Fatal(err)
	}
	c.serial++
	c.processes++
	c.stats = append(c.stats, stats)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+c.cs, chaosProcessEnv+"="+string(cfg))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := make(chan struct{})
	v := &victim{plan: plan, killed: make(chan struct{}), kill: func() {
		<-started
		cmd.Process.Kill()
	}}
	c.proxy.cur.Store(v)
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	close(started)
	done := make(chan struct{})
	var watching sync.WaitGroup
	if plan != nil {
		// Arm the kill once the checkpoint records its progress.
		watching.Go(func() {
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				if progress() >= plan.progress {
					v.armed.Store(true)
					if plan.now {
						v.fire()
					}
					return
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		})
	}
	err = cmd.Wait()
	close(done)
	watching.Wait()
	c.proxy.cur.Store(nil)
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			res.code = -1
		}
	default:
		c.t.Fatal(err)
	}
	return res
}

// plan draws the kill of a run whose checkpoint records done of total
// entities: armed at a point drawn from what is left (at once in 15% of
// the runs, within the first 70% of the rest otherwise), then 15% at
// once, 35% before a request, 35% after one was applied, 15% after an
// empty page.
func (c *cliChaos) plan(done, total int64) *killPlan {
	p := &killPlan{progress: done, at: 1 + int64(c.rng.IntN(2))}
	if left := total - done; left > 0 && c.rng.IntN(20) >= 3 {
		p.progress += c.rng.Int64N(max(left*7/10, 1))
	}
	switch r := c.rng.IntN(20); {
	case r < 3:
		p.now = true
	case r < 10:
	case r < 17:
		p.applied = true
	default:
		p.afterEmpty = true
	}
	return p
}

// checkpointProgress returns a function that reads the progress of the
// checkpoint a command keeps in file, or in job of table.
func checkpointProgress(t *testing.T, file string, table *tablekit.Table[tablekit.Entity], job string) func() int64 {
	return func() int64 {
		var s struct {
			Counts struct{ Read, Written int64 } `json:"counts"`
		}
		if json.Unmarshal(loadCheckpoint(t, file, table, job), &s) != nil {
			return 0
		}
		return max(s.Counts.Read, s.Counts.Written)
	}
}

// checkpointStarted returns when the job whose checkpoint is in file (or
// in table under job) started, as its checkpoint records it (zero: none).
func checkpointStarted(t *testing.T, file string, table *tablekit.Table[tablekit.Entity], job string) time.Time {
	var s struct {
		Started time.Time `json:"started"`
	}
	json.Unmarshal(loadCheckpoint(t, file, table, job), &s)
	return s.Started
}

// loadCheckpoint returns the state saved in file, or in table under job.
func loadCheckpoint(t *testing.T, file string, table *tablekit.Table[tablekit.Entity], job string) []byte {
	if table == nil {
		data, _ := os.ReadFile(file)
		return data
	}
	cp, err := transfer.NewTableCheckpoint(table, job)
	if err != nil {
		t.Error(err)
		return nil
	}
	data, _ := cp.Load(context.Background())
	return data
}

// until runs args, then args with --resume, until a run exits 0: runs are
// killed with SIGKILL as planned until kills of them were (a run that
// finished before its kill came ends the loop with fewer), a run that
// exits 3 is run again, any other exit fails the test. total is the
// entities the command goes through; progress reads how many its
// checkpoint records. It returns the last run's output and logs the runs.
func (c *cliChaos) until(kills int, total int64, progress func() int64, args ...string) result {
	c.t.Helper()
	return c.runs(false, kills, total, progress, args...)
}

// runs is until, whose first run has --resume when resume is true.
func (c *cliChaos) runs(resume bool, kills int, total int64, progress func() int64, args ...string) result {
	c.t.Helper()
	var log []string
	for i := 0; ; i++ {
		if i > 100 {
			c.t.Fatalf("tablekit %s did not finish in 100 runs: %v", strings.Join(args, " "), log)
		}
		line := args
		if resume {
			line = append(slices.Clone(args), "--resume")
		}
		var plan *killPlan
		if kills > 0 {
			plan = c.plan(progress(), total)
		}
		began := time.Now()
		res := c.once(line, plan, progress)
		took := time.Since(began).Round(time.Millisecond)
		resume = true
		switch {
		case res.code == -1:
			kills--
			c.kills++
			log = append(log, fmt.Sprintf("killed %s (%v)", plan, took))
			continue
		case res.code == exitIncomplete:
			c.resumes++
			log = append(log, fmt.Sprintf("exit 3 (%v)", took))
			continue
		case res.code != 0:
			c.t.Fatalf("tablekit %s: exit %d after %v\nstdout:\n%s\nstderr:\n%s", strings.Join(line, " "), res.code, log, res.stdout, res.stderr)
		}
		if plan != nil {
			log = append(log, fmt.Sprintf("not killed %s: done (%v)", plan, took))
		} else {
			log = append(log, fmt.Sprintf("done (%v)", took))
		}
		c.t.Logf("tablekit %s: %s", args[0], strings.Join(log, ", "))
		return res
	}
}

// ---- Data

// chaosPartition names the partitions: "" (the empty PartitionKey),
// "p01'q", then "p02", "p03"...
func chaosPartition(i int) string {
	switch i {
	case 0:
		return ""
	case 1:
		return "p01'q"
	}
	return fmt.Sprintf("p%02d", i)
}

// chaosEntity is entity i of a run (young: written for the purge's
// --older-than): every EDM type, values drawn from a hash.
func chaosEntity(parts, i int, young bool) tablekit.Entity {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%v", i, young)
	x := h.Sum64()
	var g tablekit.GUID
	binary.LittleEndian.PutUint64(g[:8], x)
	binary.LittleEndian.PutUint64(g[8:], ^x)
	rk := fmt.Sprintf("r%05d", i)
	if young {
		rk = fmt.Sprintf("y%05d", i)
	}
	e := tablekit.Entity{PartitionKey: chaosPartition(i % parts), RowKey: rk, Properties: map[string]any{
		"S":   fmt.Sprintf("it's \"%d\" ünï 🎉 \\", x%1000),
		"I32": int32(x), "I64": int64(x) >> 1, "D": float64(i), "F": float64(x%10000) / 7,
		"B": x%2 == 0, "T": time.Unix(1_700_000_000+int64(x%1e8), int64(x%1e7)*100).UTC(), "G": g,
	}}
	if i%3 != 0 {
		e.Properties["Bin"] = binary.LittleEndian.AppendUint64(nil, x)[:x%9]
	}
	return e
}

// typed returns the entities of tbl as comparable text with types.
func typed(t *testing.T, tbl *tablekit.Table[tablekit.Entity]) map[string]string {
	t.Helper()
	out := map[string]string{}
	for e, err := range tbl.Query(context.Background(), tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		out[e.PartitionKey+"/"+e.RowKey] = typedText(e)
	}
	return out
}

func typedText(e tablekit.Entity) string {
	props := map[string]string{}
	for k, v := range e.Properties {
		if tm, ok := v.(time.Time); ok {
			v = tm.UTC().Format(time.RFC3339Nano)
		}
		props[k] = fmt.Sprintf("%T:%v", v, v)
	}
	b, _ := json.Marshal(props)
	return string(b)
}

// sameEntities reports each difference between want and got.
func sameEntities(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	bad := 0
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: %q is missing", what, k)
			bad++
		} else if g != w {
			t.Errorf("%s: %q is %s, want %s", what, k, g, w)
			bad++
		}
		if bad > 20 {
			t.Fatalf("%s: and more", what)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %q should not be there", what, k)
		}
	}
}

var tableEndpointRe = regexp.MustCompile(`TableEndpoint=[^;]*`)

// ---- The test

// TestChaosCLIKill: each command of tablekit (export, import, copy,
// count, purge with --older-than and --budget) run as its own process
// with faults in its requests (25% of tries fail, answer-lost included;
// its checkpoint in a file or, on odd seeds, in a table of the account,
// faulted too), through a front that pages as Azure may (Table storage on
// odd seeds, Cosmos DB on even ones), killed with SIGKILL at least 5
// times per seed (once its checkpoint shows some progress: at once, or at
// a request, before it reaches the service or after it was applied, or
// after an empty page) and each time run again with --resume and the same
// command line (and again after exit 3, a purge's spent budget), until it
// exits 0.
//
// Invariant: the end state is what an uninterrupted run gives: the export
// file holds every entity of the table once, with every property and EDM
// type, and a trailer that counts them; the imported and copied tables
// equal the source and the commands report every entity written, none
// failed; the count prints the exact entities and partitions; the purge
// leaves nothing older than its cutoff in its range, everything else as
// it was, and reports deleted + gone <= listed.
//
// Each seed runs the five commands, each planned to be killed twice at
// CI size, 6 times at full size (a kill planned at some progress may come
// too late, when the command has finished).
func TestChaosCLIKill(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		cs := testenv.ConnectionString(t)
		// Cosmos DB on every seed when the test account is Cosmos DB's.
		fopts := testenv.FrontBefore(&azurite.FrontOptions{Paging: true, Cosmos: seed%2 == 0, Seed: uint64(seed)*3 + 1})
		cosmos := fopts.Cosmos
		front, err := azurite.NewFront(ctx, azurite.Endpoints{Table: tableEndpointRe.FindString(cs)[len("TableEndpoint="):]}, fopts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { front.Close() })
		target, err := url.Parse(front.Endpoints().Table)
		if err != nil {
			t.Fatal(err)
		}
		proxy := &killProxy{target: target, client: &http.Client{}}
		srv := httptest.NewServer(proxy)
		t.Cleanup(srv.Close)
		c := &cliChaos{t: t, seed: seed, cosmos: cosmos, proxy: proxy, dir: t.TempDir(),
			cs:  tableEndpointRe.ReplaceAllLiteralString(cs, "TableEndpoint="+srv.URL+target.Path),
			rng: rand.New(rand.NewPCG(uint64(seed), 0xc11))}

		acct := testenv.Account(t, nil)
		open := func(name string) *tablekit.Table[tablekit.Entity] {
			tbl, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
			if err != nil {
				t.Fatal(err)
			}
			return tbl
		}
		parts, n := chaos.Size(6, 16), chaos.Size(300, 3000)
		src := open(testenv.CreateTable(t, acct))
		var es []tablekit.Entity
		for i := range n {
			es = append(es, chaosEntity(parts, i, false))
		}
		if _, err := src.BulkWriter(nil).Upsert(ctx, es); err != nil {
			t.Fatal(err)
		}
		seeded := time.Now()
		want := typed(t, src)

		commands := []string{"export", "import", "copy", "count", "purge"}
		kills := chaos.Size(2, 6) // planned per command; at least 5 in all must come
		// Small pages and batches: the checkpoint moves in small steps, so
		// that a kill planned at some progress comes before the end.
		page := strconv.Itoa(chaos.Size(20, 100) * (1 + c.rng.IntN(2)))
		ckptTable := testenv.TableName(t)
		t.Cleanup(func() { open(ckptTable).DeleteTable(context.Background()) })
		// checkpointAt returns the flags of a command's checkpoint and
		// where it is: a file, or a table and job.
		checkpointAt := func(name string) (flags []string, file string, table *tablekit.Table[tablekit.Entity], job string) {
			if seed%2 == 1 {
				return []string{"--checkpoint-table", ckptTable, "--job", name}, "", open(ckptTable), name
			}
			file = filepath.Join(c.dir, name+".checkpoint")
			return []string{"--checkpoint", file}, file, nil, ""
		}
		// checkpoint returns the flags of a command's checkpoint, and how
		// to read its progress.
		checkpoint := func(name string) ([]string, func() int64) {
			flags, file, table, job := checkpointAt(name)
			return flags, checkpointProgress(t, file, table, job)
		}
		common := []string{"--checkpoint-every", "20ms", "--progress", "none"}
		for _, command := range commands {
			switch command {
			case "export":
				file := filepath.Join(c.dir, "export.jsonl")
				args := append([]string{"export", "--table", src.Name(), "--out", file, "--page-size", page, "--concurrency", "4"}, common...)
				cp, progress := checkpoint("export")
				res := c.until(kills, int64(n), progress, append(args, cp...)...)
				if !strings.Contains(res.stderr, fmt.Sprintf("export: %d entities", n)) {
					t.Errorf("export's last run:\n%s", res.stderr)
				}
				checkExport(t, file, want)
			case "import":
				file := filepath.Join(c.dir, "source.jsonl")
				var buf bytes.Buffer
				if _, err := transfer.Export(ctx, src, &buf, nil); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
					t.Fatal(err)
				}
				dst := open(testenv.CreateTable(t, acct))
				mode := []string{"insert", "merge", "replace"}[c.rng.IntN(3)]
				args := append([]string{"import", "--table", dst.Name(), "--in", file, "--mode", mode, "--batch", "30", "--concurrency", "4"}, common...)
				cp, progress := checkpoint("import")
				res := c.until(kills, int64(n), progress, append(args, cp...)...)
				if !strings.Contains(res.stderr, fmt.Sprintf("import: %d read, %d written, 0 failed", n, n)) {
					t.Errorf("import (%s)'s last run:\n%s", mode, res.stderr)
				}
				sameEntities(t, "import "+mode, want, typed(t, dst))
			case "copy":
				name := testenv.TableName(t)
				mode := []string{"insert", "merge", "replace"}[c.rng.IntN(3)]
				args := append([]string{"copy", "--table", src.Name(), "--to-table", name, "--create", "--mode", mode, "--page-size", page, "--concurrency", "4"}, common...)
				cp, progress := checkpoint("copy")
				res := c.until(kills, int64(n), progress, append(args, cp...)...)
				dst := open(name)
				t.Cleanup(func() { dst.DeleteTable(context.Background()) })
				if !strings.Contains(res.stderr, fmt.Sprintf("copy: %d read, %d written, 0 failed", n, n)) {
					t.Errorf("copy (%s)'s last run:\n%s", mode, res.stderr)
				}
				sameEntities(t, "copy "+mode, want, typed(t, dst))
			case "count":
				args := append([]string{"count", "--table", src.Name(), "--page-size", page, "--concurrency", "4"}, common...)
				cp, progress := checkpoint("count")
				res := c.until(kills, int64(n), progress, append(args, cp...)...)
				if w := fmt.Sprintf("entities: %d\npartitions: %d\n", n, parts); !strings.Contains(res.stdout, w) {
					t.Errorf("count's last run:\n%s\nwant %q", res.stdout, w)
				}
			case "purge":
				cp, file, table, job := checkpointAt("purge")
				started := func() time.Time { return checkpointStarted(t, file, table, job) }
				chaosPurge(t, c, src, parts, n, seeded, kills, checkpointProgress(t, file, table, job), started, page, append(common, cp...))
			}
		}

		var sum processStats
		sum.ByKind = map[chaos.Kind]int64{}
		for _, f := range c.stats {
			data, err := os.ReadFile(f)
			if err != nil {
				continue // killed before its first report
			}
			var r processStats
			if json.Unmarshal(data, &r) != nil {
				continue
			}
			sum.Eligible += r.Eligible
			sum.Faults += r.Faults
			for k, n := range r.ByKind {
				sum.ByKind[k] += n
			}
		}
		var byKind []string
		for _, k := range chaos.Kinds() {
			byKind = append(byKind, fmt.Sprintf("%s=%d", k, sum.ByKind[k]))
		}
		rate := float64(sum.Faults) / float64(max(sum.Eligible, 1))
		t.Logf("%d command processes, %d killed with SIGKILL, %d runs again after exit 3; faults in the processes (a killed one's last 10 ms not counted): %s (%d of %d tries, %.1f%%)",
			c.processes, c.kills, c.resumes, strings.Join(byKind, " "), sum.Faults, sum.Eligible, 100*rate)
		pairs := []any{"cli", "seed", "processes", c.processes, "kills", c.kills, "resumes", c.resumes, "tries", sum.Eligible, "failed", sum.Faults}
		for _, k := range chaos.Kinds() {
			pairs = append(pairs, string(k), sum.ByKind[k])
		}
		var line strings.Builder
		line.WriteString("summary:")
		for i := 0; i < len(pairs); i += 2 {
			fmt.Fprintf(&line, " %v=%v", pairs[i], pairs[i+1])
		}
		t.Log(line.String())
		if c.kills < 5 {
			t.Errorf("%d kills, want at least 5", c.kills)
		}
		if rate < 0.15 {
			t.Errorf("only %.1f%% of the processes' tries faulted, want at least 15%%", 100*rate)
		}
	})
}

// checkExport checks the export file: header, every entity of want once
// with its types, no other, and a trailer that counts them.
func checkExport(t *testing.T, file string, want map[string]string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := transfer.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break // the trailer is there, and counts the lines (the Reader checks)
		}
		if err != nil {
			t.Fatalf("export file: %v", err)
		}
		k := e.PartitionKey + "/" + e.RowKey
		if _, ok := got[k]; ok {
			t.Errorf("export file: %q is in it twice", k)
		}
		got[k] = typedText(e)
	}
	sameEntities(t, "export", want, got)
}

// purgeLine is the summary line of a purge.
var purgeLine = regexp.MustCompile(`purge complete: (\d+) listed, (\d+) deleted, (\d+) changed since listed \(left alone\), (\d+) already gone`)

// chaosPurge runs purge --older-than 2s --budget over partitions 2 to
// parts-2. A first run with a budget of 1 ms fixes the job's cutoff (2 s
// before it started, recorded in its checkpoint); then young entities are
// written there, younger than that cutoff whatever the machine's load,
// and the purge is resumed (killed, resumed, ...) until it is done: the
// young entities survive only if every resumed run keeps the first run's
// cutoff.
func chaosPurge(t *testing.T, c *cliChaos, src *tablekit.Table[tablekit.Entity], parts, n int, seeded time.Time, kills int, progress func() int64, started func() time.Time, page string, extra []string) {
	ctx := context.Background()
	// The seeded entities must be more than 2 s old when the purge starts
	// (Azurite compares times to the millisecond).
	time.Sleep(time.Until(seeded.Add(2500 * time.Millisecond)))
	from, to := chaosPartition(2), chaosPartition(parts-2)
	args := func(budget string) []string {
		return append([]string{"purge", "--table", src.Name(), "--partition-from", from, "--partition-to", to, "--older-than", "2s", "--budget", budget,
			"--page-size", page, "--transactions", "4"}, extra...)
	}
	budget := map[bool]string{false: "300ms", true: "1s"}[chaos.Full()]
	old := 0 // the entities in scope
	for k := range typed(t, src) {
		pk, rk, _ := strings.Cut(k, "/")
		if pk >= from && pk < to && strings.HasPrefix(rk, "r") {
			old++
		}
	}
	first := c.once(args("1ms"), nil, progress)
	if first.code != exitIncomplete {
		t.Fatalf("purge's first run (budget 1ms): exit %d, want 3 (incomplete)\nstdout:\n%s\nstderr:\n%s", first.code, first.stdout, first.stderr)
	}
	cutoffRun := started()
	if cutoffRun.IsZero() {
		t.Fatalf("purge's first run saved no start time in its checkpoint:\n%s", first.stderr)
	}
	var young []tablekit.Entity
	for i := range n / 10 {
		young = append(young, chaosEntity(parts, i, true))
	}
	if _, err := src.BulkWriter(nil).Upsert(ctx, young); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // what the purge leaves
	for k, v := range typed(t, src) {
		pk, rk, _ := strings.Cut(k, "/")
		if !(pk >= from && pk < to && strings.HasPrefix(rk, "r")) {
			want[k] = v
		}
	}
	res := c.runs(true, kills, int64(old), progress, args(budget)...)
	if s := started(); !s.Equal(cutoffRun) {
		t.Errorf("purge: the checkpoint's start moved from %v (first run) to %v: a resumed run must keep the first run's cutoff", cutoffRun, s)
	}
	sameEntities(t, "purge", want, typed(t, src))
	m := purgeLine.FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatalf("purge's last run:\n%s", res.stdout)
	}
	listed, _ := strconv.Atoi(m[1])
	deleted, _ := strconv.Atoi(m[2])
	changed, _ := strconv.Atoi(m[3])
	gone, _ := strconv.Atoi(m[4])
	if deleted+gone > listed || deleted > old || changed != 0 {
		t.Errorf("purge: %d listed, %d deleted, %d changed, %d gone of %d in scope; want deleted + gone <= listed, deleted <= in scope, none changed\n%s", listed, deleted, changed, gone, old, res.stdout)
	}
	t.Logf("purge: %d listed, %d deleted, %d gone of %d in scope", listed, deleted, gone, old)
}
