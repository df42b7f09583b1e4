//go:build unix

package azurite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests stand in for node, npm and Azurite with small shell scripts,
// to check tablekit's own logic (locking, errors, retries, clean-up)
// quickly and deterministically. The real programs are exercised by
// azurite_test.go.

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// tools returns a lookPath that finds only the named programs.
func tools(progs map[string]string) lookPathFunc {
	return func(name string) (string, error) {
		if p, ok := progs[name]; ok {
			return p, nil
		}
		return "", exec.ErrNotFound
	}
}

// fakeNpm is an npm that logs each run to calls, waits a little and
// installs a minimal azurite package under --prefix.
func fakeNpm(t *testing.T, dir, calls string) string {
	return writeScript(t, dir, "npm", fmt.Sprintf(`
echo run >> %q
prefix=""
while [ $# -gt 0 ]; do
	if [ "$1" = "--prefix" ]; then prefix="$2"; fi
	shift
done
sleep 0.3
mkdir -p "$prefix/node_modules/azurite/dist/src"
echo '{"name":"azurite","bin":{"azurite":"./dist/src/azurite.js"}}' > "$prefix/node_modules/azurite/package.json"
echo '// azurite' > "$prefix/node_modules/azurite/dist/src/azurite.js"
`, calls))
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

func TestInstallOnceWhenConcurrent(t *testing.T) {
	bin, cache := t.TempDir(), t.TempDir()
	calls := filepath.Join(bin, "calls")
	look := tools(map[string]string{"npm": fakeNpm(t, bin, calls)})

	// A leftover of an interrupted install, which must be cleaned up.
	if err := os.MkdirAll(filepath.Join(cache, "azurite-"+Version+".tmp-123", "junk"), 0o755); err != nil {
		t.Fatal(err)
	}

	const n = 6
	scripts := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { scripts[i], errs[i] = ensureInstalled(context.Background(), cache, look, io.Discard) })
	}
	wg.Wait()
	want := filepath.Join(cache, "azurite-"+Version, "node_modules", "azurite", "dist", "src", "azurite.js")
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if scripts[i] != want {
			t.Fatalf("caller %d got script %s, want %s", i, scripts[i], want)
		}
	}
	if got := countLines(t, calls); got != 1 {
		t.Fatalf("npm ran %d times, want once", got)
	}
	entries, _ := os.ReadDir(cache)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != "azurite-"+Version || names[1] != "azurite-"+Version+".lock" {
		t.Fatalf("cache holds %v, want only the installation and its lock file", names)
	}

	// Later calls use the installation without npm.
	if _, err := ensureInstalled(context.Background(), cache, tools(nil), io.Discard); err != nil {
		t.Fatalf("installed, without npm: %v", err)
	}
}

// TestInstallSaysSo: the first run, which waits a minute for npm, says
// what it is doing in one line; a run that finds Azurite installed says
// nothing.
func TestInstallSaysSo(t *testing.T) {
	bin, cache := t.TempDir(), t.TempDir()
	look := tools(map[string]string{
		"node": writeScript(t, bin, "node", `echo v20.1.0`),
		"npm":  fakeNpm(t, bin, filepath.Join(bin, "calls")),
	})
	var notice strings.Builder
	o := &Options{skipPath: true, CacheDir: cache, notice: &notice}
	if _, _, err := resolveCommand(context.Background(), o, look); err != nil {
		t.Fatal(err)
	}
	want := "tablekit: installing Azurite " + Version + " into " + filepath.Join(cache, "azurite-"+Version) + " (once: npm fetches about 65 MB, 360 MB installed; about a minute)\n"
	if notice.String() != want {
		t.Fatalf("before installing, stderr got %q, want %q", notice.String(), want)
	}
	notice.Reset()
	if _, _, err := resolveCommand(context.Background(), o, look); err != nil {
		t.Fatal(err)
	}
	if notice.Len() != 0 {
		t.Fatalf("already installed, stderr got %q, want nothing", notice.String())
	}
}

func TestInstallNpmFailure(t *testing.T) {
	bin, cache := t.TempDir(), t.TempDir()
	npm := writeScript(t, bin, "npm", `echo "npm error code E404" >&2; echo "npm error 404 Not Found - GET azurite" >&2; exit 1`)
	_, err := ensureInstalled(context.Background(), cache, tools(map[string]string{"npm": npm}), io.Discard)
	if err == nil {
		t.Fatal("no error from a failing npm")
	}
	for _, want := range []string{"npm install azurite@" + Version + " failed", "npm error code E404", "404 Not Found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if _, ok := installedScript(filepath.Join(cache, "azurite-"+Version)); ok {
		t.Fatal("a failed install counts as installed")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(cache, "*.tmp-*")); len(leftovers) > 0 {
		t.Fatalf("failed install left %v", leftovers)
	}

	// A later attempt with a working npm succeeds.
	calls := filepath.Join(bin, "calls")
	if _, err := ensureInstalled(context.Background(), cache, tools(map[string]string{"npm": fakeNpm(t, bin, calls)}), io.Discard); err != nil {
		t.Fatalf("retry after failure: %v", err)
	}
}

func TestNoNodeOrNpm(t *testing.T) {
	bin := t.TempDir()
	node := writeScript(t, bin, "node", `echo v20.1.0`)
	oldNode := writeScript(t, bin, "oldnode", `echo v16.20.2`)

	cases := []struct {
		name  string
		tools map[string]string
		want  string
	}{
		{"no node", nil, "no node on PATH"},
		{"node too old", map[string]string{"node": oldNode}, "Node.js v16.20.2 at " + oldNode + " is too old"},
		{"no npm", map[string]string{"node": node}, "no npm on PATH"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := &Options{skipPath: true, CacheDir: t.TempDir()}
			_, _, err := resolveCommand(context.Background(), o, tools(c.tools))
			if !errors.Is(err, ErrNodeNotFound) {
				t.Fatalf("error %v is not ErrNodeNotFound", err)
			}
			for _, want := range []string{fmt.Sprintf("Node.js %d or later, with npm, is needed", minNodeMajor), c.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestCommandFor(t *testing.T) {
	bin := t.TempDir()
	node := writeScript(t, bin, "node", `echo v22.0.0`)
	look := tools(map[string]string{"node": node})

	// npm's global install: bin/azurite -> ../lib/node_modules/azurite/dist/src/azurite.js
	pkg := filepath.Join(bin, "lib", "node_modules", "azurite", "dist", "src")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(pkg, "azurite.js")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(bin, "azurite")
	if err := os.Symlink(script, link); err != nil {
		t.Fatal(err)
	}
	prog, args, err := commandFor(context.Background(), link, look)
	if err != nil {
		t.Fatal(err)
	}
	realScript, _ := filepath.EvalSymlinks(script)
	if prog != node || len(args) != 1 || args[0] != realScript {
		t.Fatalf("commandFor(symlink) = %s %v, want %s [%s]", prog, args, node, realScript)
	}

	// Anything else runs as it is.
	wrapper := writeScript(t, bin, "azurite-wrapper", "exec true\n")
	prog, args, err = commandFor(context.Background(), wrapper, look)
	if err != nil {
		t.Fatal(err)
	}
	if realWrapper, _ := filepath.EvalSymlinks(wrapper); prog != realWrapper || len(args) != 0 {
		t.Fatalf("commandFor(wrapper) = %s %v, want it run directly", prog, args)
	}
}

func TestStartFailureShowsOutput(t *testing.T) {
	bin := t.TempDir()
	exe := writeScript(t, bin, "azurite", `echo "Exit due to unhandled error: something broke" >&2; exit 1`)
	_, err := Start(context.Background(), &Options{Executable: exe})
	if err == nil {
		t.Fatal("Start succeeded with a failing Azurite")
	}
	if !strings.HasPrefix(err.Error(), "azurite: Start: ") {
		t.Errorf("error %q does not name the operation", err)
	}
	for _, want := range []string{"exited before it was ready", "something broke"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestStartRetriesPortInUse(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	exe := writeScript(t, bin, "azurite", fmt.Sprintf(`echo run >> %q
echo "Exit due to unhandled error: listen EADDRINUSE: address already in use 127.0.0.1:10000" >&2
exit 1`, calls))
	_, err := Start(context.Background(), &Options{Executable: exe})
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("error %v, want a port-in-use error", err)
	}
	if got := countLines(t, calls); got != portAttempts {
		t.Fatalf("Azurite started %d times, want %d", got, portAttempts)
	}
}

func TestStartTimeoutKillsAzurite(t *testing.T) {
	bin := t.TempDir()
	pidFile := filepath.Join(bin, "pid")
	exe := writeScript(t, bin, "azurite", fmt.Sprintf(`echo $$ > %q
echo "Azurite is thinking"
exec sleep 60`, pidFile))
	start := time.Now()
	_, err := Start(context.Background(), &Options{Executable: exe, startTimeout: 500 * time.Millisecond})
	if err == nil {
		t.Fatal("Start succeeded with an Azurite that never listens")
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("Start took %v to give up", time.Since(start))
	}
	for _, want := range []string{"did not answer", "Azurite is thinking"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	data, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid == 0 || !processGoneInternal(pid) {
		t.Fatalf("the Azurite process %d is still running", pid)
	}
}

func TestAnnounced(t *testing.T) {
	out := "Azurite Table service is starting at http://127.0.0.1:44447\n" +
		"Azurite Blob service is successfully listening at http://127.0.0.1:4444\n"
	if !announced(out, 4444) {
		t.Error("port 4444 is announced")
	}
	if announced(out, 44447) {
		t.Error("port 44447 only started, it is not listening yet")
	}
	if announced(out, 444) {
		t.Error("port 444 matched a prefix of 4444")
	}
}

// processGoneInternal reports whether no process pid exists.
func processGoneInternal(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestOldNodeRefusedBeforeNpm: Start on a machine whose node (found on
// PATH, as Start finds it) is older than the Node.js tablekit runs Azurite
// on refuses with a message that says which Node.js it found, where, and
// which it needs, before any npm work: npm is not run and the cache
// folder stays empty. (The message said "Node.js not found".)
func TestOldNodeRefusedBeforeNpm(t *testing.T) {
	bin, cache := t.TempDir(), t.TempDir()
	node := writeScript(t, bin, "node", "echo v16.20.2\n")
	npmRan := filepath.Join(t.TempDir(), "npm-ran")
	writeScript(t, bin, "npm", fmt.Sprintf("touch %q\n", npmRan))
	t.Setenv("PATH", bin)
	_, err := Start(context.Background(), &Options{CacheDir: cache})
	if !errors.Is(err, ErrNodeNotFound) {
		t.Fatalf("Start: %v; want an error matching ErrNodeNotFound", err)
	}
	for _, want := range []string{
		"azurite: Start: ",
		"Node.js v16.20.2 at " + node + " is too old",
		fmt.Sprintf("Node.js %d or later", minNodeMajor),
		"Azurite " + Version,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "not found") {
		t.Errorf("error %q says Node.js was not found", err)
	}
	if _, err := os.Stat(npmRan); err == nil {
		t.Error("npm ran")
	}
	if left, _ := os.ReadDir(cache); len(left) != 0 {
		t.Errorf("the cache folder holds %v, want nothing", left)
	}
}

// TestNodeRequirementIsOneNumber: README.md and the package documentation
// say the Node.js version the launcher checks (they said 18 while Azurite
// asked for 22, without saying why either was true).
func TestNodeRequirementIsOneNumber(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("azurite.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, text, want string
	}{
		{"README.md", string(readme), fmt.Sprintf("**Node.js %d+**", minNodeMajor)},
		{"the package documentation", string(doc), fmt.Sprintf("Node.js %d or later (with npm)", minNodeMajor)},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s does not say %q", c.what, c.want)
		}
		for _, other := range []int{16, 18, 20, 21, 22, 24} {
			if other == minNodeMajor {
				continue
			}
			for _, f := range []string{"**Node.js %d+**", "Node.js %d+ ", "Node.js %d or later"} {
				if s := fmt.Sprintf(f, other); strings.Contains(c.text, s) {
					t.Errorf("%s says %q, but tablekit needs Node.js %d", c.what, s, minNodeMajor)
				}
			}
		}
	}
}
