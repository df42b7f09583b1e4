package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary run as the command, so that the test can
// run it as a user would.
func TestMain(m *testing.M) {
	if os.Getenv("TABLEKIT_VET_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// run runs the command with args in the analyzer's testdata module.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = filepath.Join("wherecheck", "testdata")
	// The samples' go.work uses this repository's tablekit; the go command
	// may still fetch go.mod files of the module graph that a fresh
	// machine has not downloaded yet, so the user's GOPROXY stays.
	cmd.Env = append(os.Environ(), "TABLEKIT_VET_RUN_MAIN=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

func TestCommandFindsWrongPlaceholderCount(t *testing.T) {
	out, code := run(t, "./count")
	if code != 3 || !strings.Contains(out, `main.go:39:37: tablekit.Where: filter "PartitionKey eq ? and RowKey eq ?": 2 placeholders, 1 arguments`) {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestCommandScanFlag(t *testing.T) {
	out, code := run(t, "./scans")
	if code != 3 || !strings.Contains(out, "table scan") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	out, code = run(t, "-scan=false", "./scans")
	if strings.Contains(out, "table scan") || !strings.Contains(out, "is not understood") || code != 3 {
		t.Errorf("-scan=false: exit %d, output:\n%s", code, out)
	}
}

// The trap a newcomer met: a number compared with a string property is
// sent, accepted, and matches nothing.
func TestCommandFindsArgumentOfAnotherType(t *testing.T) {
	out, code := run(t, "./props")
	if code != 3 || !strings.Contains(out, "argument 2: LastName of Employee is an Edm.String property (field LastName string), but the argument is int, rendered as an Edm.Int64 literal") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}
