package chaos_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testkit/chaos"
)

// testChildEnv holds the config of testChild, the child the tests of
// StartProcess start (this test binary, re-executed; see TestMain).
const testChildEnv = "TABLEKIT_CHAOS_TEST_CHILD"

// testChildConfig says what testChild does.
type testChildConfig struct {
	Lines int  // "LINE <i> a b" lines to write first, then "READY"
	Hold  bool // then block for ever, whatever stdin does
	Exit  int  // else, once stdin ends: write "STOPPING" and exit with this code
}

func testChild(ctx context.Context, cfg testChildConfig) int {
	for i := range cfg.Lines {
		fmt.Printf("LINE %d a  b\n", i)
	}
	fmt.Println("READY")
	if cfg.Hold {
		select {}
	}
	<-ctx.Done()
	fmt.Println("STOPPING")
	return cfg.Exit
}

// echoChildEnv, set, makes this test binary echoChild: a child that
// reads its stdin itself, for Process.Send.
const echoChildEnv = "TABLEKIT_CHAOS_TEST_ECHO"

// echoChild writes "ECHO <line>" for each line of its stdin, and exits
// at its end.
func echoChild() int {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Println("ECHO", sc.Text())
	}
	return 0
}

// lines collects what a child writes, and signals its READY line.
type lines struct {
	mu    sync.Mutex
	got   [][]string
	ready chan struct{}
}

func newLines() *lines { return &lines{ready: make(chan struct{})} }

func (l *lines) onLine(fields []string) {
	l.mu.Lock()
	l.got = append(l.got, fields)
	l.mu.Unlock()
	if fields[len(fields)-1] == "READY" {
		close(l.ready)
	}
}

func (l *lines) wait(t *testing.T) {
	t.Helper()
	select {
	case <-l.ready:
	case <-time.After(time.Minute):
		t.Fatal("no READY line from the child within a minute")
	}
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Err() = %v, want an *exec.ExitError", err)
	}
	return ee.ExitCode()
}

func signalled(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// Every line reaches onLine, in order and split into fields, including
// those the child writes after its stdin closed; StopProcesses returns
// once the child exited by itself.
func TestProcessLinesAndStop(t *testing.T) {
	const n = 2000
	l := newLines()
	p := chaos.StartProcess(t, testChildEnv, testChildConfig{Lines: n}, l.onLine)
	l.wait(t)
	if err := chaos.StopProcesses(time.Minute, p); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after StopProcesses")
	}
	if err := p.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.got) != n+2 {
		t.Fatalf("%d lines, want %d", len(l.got), n+2)
	}
	for i, f := range l.got[:n] {
		if want := []string{"LINE", fmt.Sprint(i), "a", "b"}; !slices.Equal(f, want) {
			t.Fatalf("line %d: %q, want %q", i, f, want)
		}
	}
	if !slices.Equal(l.got[n], []string{"READY"}) || !slices.Equal(l.got[n+1], []string{"STOPPING"}) {
		t.Errorf("last lines %q, want READY then STOPPING", l.got[n:])
	}
}

// A child that exits with an error status of its own is named by
// StopProcesses, and its status is Err's.
func TestProcessExitCode(t *testing.T) {
	p := chaos.StartProcess(t, testChildEnv, testChildConfig{Exit: 3}, nil)
	if err := chaos.StopProcesses(time.Minute, p); err == nil || !strings.Contains(err.Error(), "failed: exit status 3") {
		t.Errorf("StopProcesses: %v, want the child named as failed with exit status 3", err)
	}
	if code := exitCode(t, p.Err()); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
}

// A config the child cannot decode: RunChild exits with code 2.
func TestRunChildBadConfig(t *testing.T) {
	p := chaos.StartProcess(t, testChildEnv, "not an object", nil)
	<-p.Done()
	if code := exitCode(t, p.Err()); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
}

func TestProcessKill(t *testing.T) {
	l := newLines()
	p := chaos.StartProcess(t, testChildEnv, testChildConfig{Lines: 3, Hold: true}, l.onLine)
	l.wait(t)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Kill")
	}
	if err := p.Err(); !signalled(err, syscall.SIGKILL) {
		t.Errorf("Err() = %v, want death by SIGKILL", err)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}
	if err := chaos.StopProcesses(time.Minute, p); err != nil {
		t.Errorf("StopProcesses of an ended process: %v", err)
	}
	if err := p.Send("x"); err == nil {
		t.Error("Send to an ended process: no error")
	}
}

// A child that does not stop within grace is killed, and named in the
// error; the others stop by themselves, within the same grace (a process
// built with -race sleeps 1 s before it exits: GORACE's atexit_sleep_ms).
func TestStopProcessesKillsAfterGrace(t *testing.T) {
	a, b := newLines(), newLines()
	held := chaos.StartProcess(t, testChildEnv, testChildConfig{Hold: true}, a.onLine)
	good := chaos.StartProcess(t, testChildEnv, testChildConfig{}, b.onLine)
	a.wait(t)
	b.wait(t)
	begin := time.Now()
	err := chaos.StopProcesses(3*time.Second, held, good)
	if err == nil || !strings.Contains(err.Error(), "did not stop within 3s") || strings.Count(err.Error(), "did not stop") != 1 {
		t.Errorf("StopProcesses: %v, want one process that did not stop within 3s", err)
	}
	t.Logf("StopProcesses returned after %v: %v", time.Since(begin).Round(time.Millisecond), err)
	if err := held.Err(); !signalled(err, syscall.SIGKILL) {
		t.Errorf("held process: Err() = %v, want death by SIGKILL", err)
	}
	if err := good.Err(); err != nil {
		t.Errorf("stopping process: Err() = %v, want nil", err)
	}
}

func TestProcessSend(t *testing.T) {
	l := newLines()
	p := chaos.StartProcess(t, echoChildEnv, struct{}{}, l.onLine)
	for _, s := range []string{"hello world", "READY"} {
		if err := p.Send(s); err != nil {
			t.Fatal(err)
		}
	}
	l.wait(t)
	if err := chaos.StopProcesses(time.Minute, p); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if want := [][]string{{"ECHO", "hello", "world"}, {"ECHO", "READY"}}; !slices.EqualFunc(l.got, want, slices.Equal) {
		t.Errorf("lines %q, want %q", l.got, want)
	}
}

// tbErrors is a testing.TB that records Errorf calls instead of failing.
type tbErrors struct {
	testing.TB
	errs []string
}

func (r *tbErrors) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// A process that cannot start: the test is told, and the Process is one
// that has ended.
func TestStartProcessFailure(t *testing.T) {
	r := &tbErrors{TB: t}
	p := chaos.StartProcess(r, testChildEnv, make(chan int), nil) // no JSON for a channel
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], testChildEnv) {
		t.Errorf("errors reported: %q, want one naming %s", r.errs, testChildEnv)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed")
	}
	if p.Err() == nil {
		t.Error("Err() = nil")
	}
	if err := p.Kill(); err != nil {
		t.Errorf("Kill: %v", err)
	}
	if err := chaos.StopProcesses(time.Second, p); err != nil {
		t.Errorf("StopProcesses: %v", err)
	}
	if err := p.Send("x"); err == nil {
		t.Error("Send: no error")
	}
}
