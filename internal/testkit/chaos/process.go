package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Process is a child process started by [StartProcess]: the test binary
// itself, re-executed to run one part of a chaos test (a worker, a relay,
// a contender) in a process of its own, so that the test can kill it with
// SIGKILL mid-work. Its methods are safe for concurrent use.
type Process struct {
	env   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error       // Wait's (or the start's), once done is closed
	kill  atomic.Bool // Kill was called: an error exit is the test's doing
}

// StartProcess starts the test binary as a child process that runs the
// child side of env (see [RunChild]) with config, marshalled to JSON, in
// the environment variable env. The child runs no tests ("-test.run=^$"),
// its stderr is the test's, and onLine (if not nil) is called with the
// fields (strings.Fields) of each line it writes to its stdout, in order,
// from one goroutine; every call has returned when [Process.Done] is
// closed. A child still running when t ends is killed.
//
// StartProcess may be called from any goroutine of the test: if the
// process cannot be started, it reports the error with t.Errorf and
// returns a Process that has already ended, with the error as its
// [Process.Err].
func StartProcess(t testing.TB, env string, config any, onLine func(fields []string)) *Process {
	p := &Process{env: env, done: make(chan struct{})}
	if err := p.start(config, onLine); err != nil {
		t.Errorf("chaos: starting a child process (%s): %v", env, err)
		p.err = err
		close(p.done)
		return p
	}
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

func (p *Process) start(config any, onLine func(fields []string)) error {
	data, err := json.Marshal(config)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), p.env+"="+string(data))
	p.cmd.Stderr = os.Stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if onLine != nil {
				onLine(strings.Fields(sc.Text()))
			}
		}
		// A line too long for the scanner: read on, so that the child
		// never blocks on a full pipe, and Wait can return.
		_, _ = io.Copy(io.Discard, stdout)
		p.err = p.cmd.Wait()
	}()
	return nil
}

// Kill kills the process with SIGKILL, unless it has ended, and waits
// until it has ended and every line it wrote has been handled. It returns
// an error only if the signal could not be sent.
func (p *Process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.kill.Store(true)
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("chaos: killing child process %d (%s): %w", p.cmd.Process.Pid, p.env, err)
	}
	<-p.done
	return nil
}

// Send writes line and a newline to the process's stdin: a command to a
// child that reads its stdin itself rather than through [RunChild].
func (p *Process) Send(line string) error {
	if p.stdin == nil {
		return p.err
	}
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// Done returns a channel that is closed when the process has ended and
// every line it wrote has been handled.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns, once [Process.Done] is closed, how the process ended: nil
// if it exited with status 0, an *exec.ExitError otherwise (killed
// processes too), or the error that kept it from starting.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// StopProcesses asks each of procs to stop, by closing its stdin (the
// context [RunChild] gives ends), and waits for them all to end, for at
// most grace from the asking: a process still running then is killed,
// and the error returned names it. It names too each process that ended
// with an error of its own (an exit status other than 0, now or earlier
// in the test, without a Kill): a child that failed must not go
// unnoticed because the others did its work.
func StopProcesses(grace time.Duration, procs ...*Process) error {
	for _, p := range procs {
		if p.stdin != nil {
			_ = p.stdin.Close()
		}
	}
	deadline := time.Now().Add(grace)
	var errs []error
	for _, p := range procs {
		select {
		case <-p.done:
			continue
		default:
		}
		select {
		case <-p.done:
		case <-time.After(time.Until(deadline)):
			errs = append(errs, fmt.Errorf("chaos: child process %d (%s) did not stop within %v of its stdin closing; killed", p.cmd.Process.Pid, p.env, grace))
			if err := p.Kill(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, p := range procs {
		// A process that never started was reported by StartProcess.
		if err := p.Err(); err != nil && !p.kill.Load() && p.cmd != nil && p.cmd.Process != nil {
			errs = append(errs, fmt.Errorf("chaos: child process %s (%s) failed: %w", p.pid(), p.env, err))
		}
	}
	return errors.Join(errs...)
}

// pid returns the process's id, or "(not started)".
func (p *Process) pid() string {
	if p.cmd == nil || p.cmd.Process == nil {
		return "(not started)"
	}
	return strconv.Itoa(p.cmd.Process.Pid)
}

// RunChild is the child side of [StartProcess], for TestMain: if the
// environment variable env is set (not empty), RunChild decodes its JSON
// into a C, calls main with it and a context that ends when the process's
// stdin ends (the parent's [StopProcesses], or its death), and exits the
// process with the code main returns; a config it cannot decode is
// reported on stderr, with exit code 2. If env is empty, RunChild returns
// at once:
//
//	func TestMain(m *testing.M) {
//		chaos.RunChild(workerEnv, workerProcess) // workerProcess(ctx, cfg workerConfig) int
//		testenv.Main(m)
//	}
func RunChild[C any](env string, main func(ctx context.Context, cfg C) int) {
	data := os.Getenv(env)
	if data == "" {
		return
	}
	var cfg C
	if err := json.Unmarshal([]byte(data), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %s: %v\n", env, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	code := main(ctx, cfg)
	cancel()
	os.Exit(code)
}
