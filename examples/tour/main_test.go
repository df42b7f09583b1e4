package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestList(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-list"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, name := range examples {
		if !strings.Contains(out.String(), name+" ") {
			t.Errorf("-list lacks %s:\n%s", name, out.String())
		}
	}
	if !strings.Contains(out.String(), "basics             shows tablekit's typed core") {
		t.Errorf("-list does not give the examples' summaries:\n%s", out.String())
	}
	if code := run(context.Background(), []string{"-run", "nosuch"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), `no example "nosuch"`) {
		t.Errorf("-run nosuch: exit %d, %s", code, errs.String())
	}
}

// TestTourRunsAnExample: the tour builds an example program, runs it
// against the account and reports its narration and cost.
func TestTourRunsAnExample(t *testing.T) {
	t.Setenv(azurite.ConnectionStringEnv, testenv.ConnectionString(t))
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-run", "basics"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	for _, want := range []string{
		"== [1/1] basics: shows tablekit's typed core",
		"   a conflicting transaction failed as a whole: action 1, EntityAlreadyExists",
		"   ok in ",
		"1 of 1 examples passed; 14 storage transactions in all.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tour output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestTourShowsNoWorkerLifecycle: the examples that run a queue worker
// (archive moves, index upkeep, the CQRS projection) print what they did,
// not the worker's lifecycle ("worker started", "worker stopping",
// "worker stopped" were INFO lines in the tour's output): a worker logs
// its lifecycle at Debug, below slog's default level.
func TestTourShowsNoWorkerLifecycle(t *testing.T) {
	t.Setenv(azurite.ConnectionStringEnv, testenv.ConnectionString(t))
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-run", "archive,secondaryindex,cqrs"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "3 of 3 examples passed") {
		t.Errorf("tour output:\n%s", out.String())
	}
	for _, line := range []string{"worker started", "worker stopping", "worker stopped"} {
		if strings.Contains(out.String(), line) || strings.Contains(errs.String(), line) {
			t.Errorf("the tour's output has the worker's %q:\n%s%s", line, out.String(), errs.String())
		}
	}
}
