// Command tablekit exports, imports, copies, purges and counts the
// entities of Azure Table storage tables (and Azurite's), in parallel and
// resumably, over the library package github.com/tablekit/tablekit/transfer.
//
// Install:
//
//	go install github.com/tablekit/tablekit/cmd/tablekit@latest
//
// Usage:
//
//	tablekit export --table T [scope] [--out FILE] [--resume]
//	tablekit import --table T [--in FILE] [--mode insert|merge|replace] [--create] [--resume]
//	tablekit copy   --table T --to-table U [--to-connection-string CS | --to-sas-url URL] [scope] [--mode ...] [--resume]
//	tablekit purge  --table T (scope | --all) [--budget 10m] [--dry-run] [--resume]
//	tablekit count  --table T [scope] [--resume]
//	tablekit conformance [--connection-string CS | --sas-url URL] [--cosmos]
//
// The account is AZURE_STORAGE_CONNECTION_STRING, --connection-string, or a
// table SAS URL (--sas-url, which also names the table). A scope is
// --partition PK, or --partition-from PK and/or --partition-to PK (its
// exclusive end), with optional --filter EXPR (OData) and --older-than (a
// duration such as 720h, or an RFC 3339 time). Run "tablekit help COMMAND"
// for every flag.
//
// import and copy check that the destination table exists before any data
// moves (--create creates it); export writes FILE.partial and renames it
// FILE when the export is complete, so that a failed export leaves FILE as
// it was. Every command but conformance keeps a checkpoint, by default a
// file in the user cache folder (tablekit/checkpoints in
// os.UserCacheDir: ~/.cache on Linux) named after the command line,
// removed when the run finishes and named on stderr when it is kept: run
// the same command with --resume to go on. --checkpoint FILE (kept) or
// --checkpoint-table T choose another place, --no-checkpoint none.
//
// conformance probes an endpoint (Azure Table storage, Cosmos DB for
// Table, an emulator or a proxy) for the behaviours tablekit depends on
// and prints one line per behaviour: as expected (as the live service
// behaves), differs (and how), or not applicable. It works in a table of
// its own, which it deletes, and sends a bounded, printed number of
// requests. Run it against your own account before you rely on a new
// endpoint.
//
// Progress goes to stderr: a progress bar on a terminal, plain lines every
// few seconds otherwise. Exit codes: 0 done; 1 failed (a table that does
// not exist, a service or file error); 2 bad usage (flags, names, a
// connection string or SAS URL that cannot be right; nothing is sent); 3
// stopped before the end (budget spent, interrupted, or a copy or import
// whose entities failed for a passing reason such as throttling: run
// again with --resume); 4 done, but some entities failed (listed on
// stderr), or some behaviours differ (conformance).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tablekit/tablekit"
)

// Exit codes.
const (
	exitOK         = 0
	exitFailed     = 1
	exitUsage      = 2
	exitIncomplete = 3
	exitFailures   = 4
)

// errIncomplete marks a run that stopped before the end and can resume.
var errIncomplete = errors.New("stopped before the end: run again with --resume to go on")

// errFailures marks a run that finished with some entities failed.
var errFailures = errors.New("some entities failed")

// usageError is a command line the program cannot run.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// command is one subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, env *env, args []string) error
}

var commands = []command{
	{"export", "write a table (or part of it) to a file, one JSON line per entity", runExport},
	{"import", "write the entities of an export file into a table", runImport},
	{"copy", "copy entities from one table to another, also across accounts", runCopy},
	{"purge", "delete every entity in a scope, resumably (--dry-run: count and cost only)", runPurge},
	{"count", "count the entities in a scope (keys-only listing) and show the cost", runCount},
	{"conformance", "probe an endpoint for the behaviours tablekit depends on, as the live service has them", runConformance},
}

// env is what a command runs with: the process's streams and environment.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	stderrTerminal bool
	// open opens the account of a connection string with opts (nil means
	// tablekit.Open). Only the tests set it: their re-executed test binary
	// runs the command with a fault injector in every account, and their
	// runs in this process count the transactions in a Meter.
	open func(connectionString string, opts *tablekit.Options) (*tablekit.Account, error)
}

// openAccount opens the account of a connection string.
func (e *env) openAccount(connectionString string) (*tablekit.Account, error) {
	if e.open != nil {
		return e.open(connectionString, nil)
	}
	return tablekit.Open(connectionString, nil)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, stderrTerminal: isTerminal(os.Stderr)}
	os.Exit(run(ctx, e, os.Args[1:]))
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		if len(args) == 0 {
			fmt.Fprint(e.stderr, "tablekit: no command given\n\n")
			usage(e.stderr)
			return exitUsage
		}
		usage(e.stderr)
		return exitOK
	}
	name := args[0]
	if name == "help" {
		name, args = args[1], []string{args[1], "-h"}
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		err := c.run(ctx, e, args[1:])
		var ue *usageError
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.As(err, &ue):
			fmt.Fprintf(e.stderr, "tablekit %s: %v\nRun 'tablekit help %s' for usage.\n", name, err, name)
			return exitUsage
		case errors.Is(err, errIncomplete):
			fmt.Fprintf(e.stderr, "tablekit %s: %v\n", name, err)
			return exitIncomplete
		case errors.Is(err, errFailures), errors.Is(err, errDiffers):
			fmt.Fprintf(e.stderr, "tablekit %s: %v\n", name, err)
			return exitFailures
		}
		fmt.Fprintf(e.stderr, "tablekit %s: %v\n", name, err)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "tablekit: unknown command %q\nRun 'tablekit help' for usage.\n", name)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: tablekit COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The account comes from AZURE_STORAGE_CONNECTION_STRING, --connection-string or --sas-url.")
	fmt.Fprintln(w, "Run 'tablekit help COMMAND' for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 done, 1 failed, 2 usage, 3 stopped before the end (--resume), 4 some entities failed (conformance: some behaviours differ).")
}
