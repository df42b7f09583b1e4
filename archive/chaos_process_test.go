package archive_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/timing"
)

// TestChaosArchiveProcesses is the archive check across OS processes: at
// least 3 processes (this test binary, re-executed as a worker, see
// TestMain) run workers on one queue, each with faults of its own
// injected into its table, queue and blob requests, while writers in this
// process request moves under faults too. One worker process at a time
// is killed with SIGKILL, at least 5 times, each time while it has a move
// in flight (as its last report, at most 10 ms old, says), and a fresh
// process replaces it. Then the faults stop, the workers drain the queue
// (a killed worker's messages reappear after their 1 s visibility
// timeout) and the processes are stopped gracefully. The invariant is
// TestChaosArchiveMove's (see chaos_test.go); the orphan blobs allowed
// also include up to Concurrency per kill (a worker killed between a
// message delete and its blob delete).

// chaosWorkerEnv holds a worker process's configuration (JSON
// chaosWorkerConfig). Set, TestMain runs the worker instead of the tests.
const chaosWorkerEnv = "TABLEKIT_ARCHIVE_CHAOS_WORKER"

// chaosWorkerConfig is what a worker process is told.
type chaosWorkerConfig struct {
	Names chaosNames
	Seed  int64  // seed of the process's own fault injector
	Stats string // file the process writes its procReport to, every 10 ms
}

// procReport is what a worker process reports about itself.
type procReport struct {
	InFlight, Started int64         // handlers running now, and started in all
	Early, Late       int64         // handler failures injected (chaosHandler)
	Worker            archive.Stats // the worker's counters
	Eligible, Faults  int64         // tries that faults could go into, and that faults failed
	ByKind            map[chaos.Kind]int64
	ByOp              map[string]int64 // "service/operation/kind"
	Done              bool             // Run returned
}

// reportOps are the operations whose faults a worker process reports one
// by one.
var reportOps = [][2]string{{"queue", "DeleteMessage"}, {"queue", "PutMessage"}}

func makeReport(h *chaosHandler, w *archive.Worker, st chaos.Stats) procReport {
	r := procReport{InFlight: h.inFlight.Load(), Started: h.started.Load(), Early: h.early.Load(), Late: h.late.Load(), Worker: w.Stats(),
		Eligible: st.Eligible("", ""), Faults: st.Faults(), ByKind: map[chaos.Kind]int64{}, ByOp: map[string]int64{}}
	for _, k := range chaos.Kinds() {
		r.ByKind[k] = st.Count(k, "", "")
		for _, op := range reportOps {
			r.ByOp[op[0]+"/"+op[1]+"/"+string(k)] = st.Count(k, op[0], op[1])
		}
	}
	return r
}

// chaosWorkerProcess is the main function of a worker process: it runs a
// worker until its stdin ends, turns its faults off when it reads
// "nofaults", and reports itself every 10 ms. It returns the exit code.
func chaosWorkerProcess(cfgJSON string) int {
	var cfg chaosWorkerConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		return 2
	}
	inj, err := chaos.New(cfg.Seed, chaosFaults())
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	acct, err := inj.Open(cfg.Names.Conn, &tablekit.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		return 2
	}
	w, h, err := openChaosWorker(acct, cfg.Names, cfg.Seed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "nofaults" {
				inj.SetEnabled(false)
			}
		}
		cancel() // stdin closed: stop
	}()
	report := func(done bool) {
		r := makeReport(h, w, inj.Stats())
		r.Done = done
		data, err := json.Marshal(r)
		if err == nil {
			tmp := cfg.Stats + ".tmp"
			if err = os.WriteFile(tmp, data, 0o600); err == nil {
				err = os.Rename(tmp, cfg.Stats)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker process: report:", err)
		}
	}
	stopReports := make(chan struct{})
	reportsDone := make(chan struct{})
	go func() {
		defer close(reportsDone)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				report(false)
			case <-stopReports:
				return
			}
		}
	}()
	err = w.Run(ctx)
	close(stopReports)
	<-reportsDone
	report(true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker process: Run:", err)
		return 1
	}
	return 0
}

// workerProc is a running worker process.
type workerProc struct {
	*chaos.Process
	serial int
	stats  string // the file it writes its procReport to
}

// startWorkerProc starts worker process number serial.
func startWorkerProc(t *testing.T, names chaosNames, seed int64, serial int, dir string) *workerProc {
	p := &workerProc{serial: serial, stats: filepath.Join(dir, fmt.Sprintf("worker-%d.json", serial))}
	p.Process = chaos.StartProcess(t, chaosWorkerEnv, chaosWorkerConfig{Names: names, Seed: seed*1000 + int64(serial), Stats: p.stats}, nil)
	return p
}

// report returns the process's last report (zero if none yet).
func (p *workerProc) report() procReport {
	data, err := os.ReadFile(p.stats)
	var r procReport
	if err == nil {
		_ = json.Unmarshal(data, &r)
	}
	return r
}

// addReport adds r's fault counts into sum.
func addReport(sum *procReport, r procReport) {
	if sum.ByKind == nil {
		sum.ByKind, sum.ByOp = map[chaos.Kind]int64{}, map[string]int64{}
	}
	sum.Eligible += r.Eligible
	sum.Early += r.Early
	sum.Late += r.Late
	sum.Faults += r.Faults
	for k, n := range r.ByKind {
		sum.ByKind[k] += n
	}
	for k, n := range r.ByOp {
		sum.ByOp[k] += n
	}
	sum.Worker.Received += r.Worker.Received
	sum.Worker.Succeeded += r.Worker.Succeeded
	sum.Worker.Failed += r.Worker.Failed
	sum.Worker.Poisoned += r.Worker.Poisoned
	sum.Worker.Renewed += r.Worker.Renewed
	sum.Worker.Lost += r.Worker.Lost
	sum.Worker.Abandoned += r.Worker.Abandoned
	sum.Worker.Throttled += r.Worker.Throttled
	sum.Worker.MaxQueueAge = max(sum.Worker.MaxQueueAge, r.Worker.MaxQueueAge)
}

func TestChaosArchiveProcesses(t *testing.T) {
	const procs, concurrency = 3, 4 // concurrency: openChaosWorker's
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaosFaults())
		if err != nil {
			t.Fatal(err)
		}
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		names := newChaosNames(t, setup)
		writers, perWriter, kills := chaos.Size(8, 16), chaos.Size(8, 20), chaos.Size(5, 10)
		plans := chaosPlans(seed, writers, perWriter)
		seedChaosEntities(ctx, t, setup, names, plans)
		dir := t.TempDir()

		var (
			mu      sync.Mutex
			live    []*workerProc
			all     []*workerProc
			serials int
		)
		start := func() *workerProc {
			mu.Lock()
			defer mu.Unlock()
			p := startWorkerProc(t, names, seed, serials, dir)
			serials++
			all = append(all, p)
			return p
		}
		for range procs {
			live = append(live, start())
		}
		inj.SetEnabled(true)

		// The writers request their moves in rounds; the killer opens the
		// next round after each kill, so the workers have moves to handle
		// whenever one is killed.
		rounds := kills + 3 // a few spare rounds for waits that find no move in flight
		gates := make([]chan struct{}, rounds)
		for i := range gates {
			gates[i] = make(chan struct{})
		}
		close(gates[0])
		opened := 1
		openNext := func() bool {
			if opened == rounds {
				return false
			}
			close(gates[opened])
			opened++
			return true
		}
		killerDone := make(chan struct{})
		var killed, cold int
		var killErr error
		go func() {
			defer close(killerDone)
			defer func() {
				for openNext() {
				}
			}()
			rng := rand.New(rand.NewPCG(uint64(seed), 0x5167))
			for killed < kills {
				timing.Sleep(ctx, time.Duration(rng.IntN(60))*time.Millisecond)
				// The victim is one of the processes with a move in
				// flight; when none has one for a while, let more moves in.
				var hot []int
				for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
					hot = hot[:0]
					for i, p := range live {
						if p.report().InFlight > 0 {
							hot = append(hot, i)
						}
					}
					if len(hot) > 0 || time.Now().After(deadline) {
						break
					}
				}
				if len(hot) == 0 {
					cold++
					if !openNext() {
						return // out of work; checked below
					}
					continue
				}
				i := hot[rng.IntN(len(hot))]
				if killErr = live[i].Kill(); killErr != nil {
					return
				}
				live[i] = start()
				killed++
				openNext()
			}
		}()

		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			acct, err := inj.Open(names.Conn, nil)
			if err != nil {
				return err
			}
			return chaosWrite(ctx, w, acct, names, plans[w.Index], func(i int) {
				<-gates[i*rounds/len(plans[w.Index])]
			})
		})
		<-killerDone
		if err != nil {
			t.Fatal(err)
		}
		if killErr != nil {
			t.Fatal(killErr)
		}
		if killed < kills {
			t.Fatalf("only %d of %d kills caught a worker process with a move in flight (%d waits found none)", killed, kills, cold)
		}

		// The workers take the queue down under faults; then the faults
		// stop everywhere, the workers drain the rest and stop.
		drainChaosQueue(t, setup, names, func() {
			inj.SetEnabled(false)
			for _, p := range live {
				if err := p.Send("nofaults"); err != nil {
					t.Fatalf("worker process %d: %v", p.serial, err)
				}
			}
		})
		stopping := make([]*chaos.Process, len(live))
		for i, p := range live {
			stopping[i] = p.Process
		}
		if err := chaos.StopProcesses(time.Minute, stopping...); err != nil {
			t.Error(err)
		}
		for _, p := range live {
			if err := p.Err(); err != nil {
				t.Errorf("worker process %d: %v (its stderr is in the test's output)", p.serial, err)
			}
		}

		st := inj.Stats()
		var sum procReport
		for _, p := range all {
			addReport(&sum, p.report())
		}
		eligible, faults := st.Eligible("", "")+sum.Eligible, st.Faults()+sum.Faults
		byKind := ""
		for _, k := range chaos.Kinds() {
			byKind += fmt.Sprintf("%s=%d ", k, st.Count(k, "", "")+sum.ByKind[k])
		}
		t.Logf("%d ops (%d ok, %d failed, %d unknown); %d worker processes, %d killed with SIGKILL (%d waits for a busy victim found none)",
			h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown), serials, killed, cold)
		t.Logf("faults (writers and worker processes; the killed processes' last 10 ms are not counted): %s(%.1f%% of %d tries)", byKind, 100*float64(faults)/float64(max(eligible, 1)), eligible)
		t.Logf("worker processes: %+v; handler failures injected: %d before the move, %d after", sum.Worker, sum.Early, sum.Late)
		t.Logf("writers' faults: %v", st)
		logFailedOps(t, h)
		if rate := float64(faults) / float64(max(eligible, 1)); rate < 0.15 {
			t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
		}

		state := readChaosState(ctx, t, setup, names)
		var v chaos.Violations
		tally := checkChaosMoves(h, plans, state, &v)
		t.Logf("entities: %s", tally)
		allowed, why := orphanBudget(st)
		for _, k := range []string{"queue/DeleteMessage/answer-lost", "queue/DeleteMessage/timeout-after"} {
			allowed += sum.ByOp[k]
		}
		allowed += int64(killed * concurrency)
		why += fmt.Sprintf(", %d handlers in %d killed processes", concurrency, killed)
		left := leftoverBlobs(h, state, allowed, why, &v)
		t.Logf("claim-check blobs left: %d (at most %d allowed)", left, allowed)
		if h.Len() < 300 && chaos.Full() {
			v.Addf("only %d operations ran, want at least 300", h.Len())
		}
		v.Report(t)
	})
}
