// Command tour runs every example of tablekit's patterns, one after the
// other, against one storage account, and prints what each said and what
// it cost in storage transactions.
//
// It connects to the account in AZURE_STORAGE_CONNECTION_STRING, or starts
// an Azurite (installed with npm on first use: needs Node.js 18+), builds
// the example programs (examples/<name>, each a plain program you can read
// and copy) and runs each against that account.
//
// Usage, from the repository's root:
//
//	go run ./examples/tour             # run every example
//	go run ./examples/tour -list       # list the examples
//	go run ./examples/tour -run basics # run some (comma-separated names)
//
// Each example creates what it needs under names of its own and deletes it
// again, so the tour can run against a shared account.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tablekit/tablekit/azurite"
)

// modulePath is the import path the examples live under.
const modulePath = "github.com/tablekit/tablekit/examples/"

// examples are the tour's programs, in the order it runs them: from the
// typed core to the patterns that build on it.
var examples = []string{
	"basics",
	"queries",
	"compoundkey",
	"secondaryindex",
	"indexentities",
	"archive",
	"tracing",
	"logtail",
	"bloblog",
	"wideentities",
	"largeentities",
	"dataseries",
	"highvolumedelete",
	"shardedstream",
	"heterogeneous",
	"denormalization",
	"encryption",
	"sas",
	"coordination",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the tour: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("tour", flag.ContinueOnError)
	flags.SetOutput(stderr)
	list := flags.Bool("list", false, "list the examples and exit")
	only := flags.String("run", "", "run only these examples (comma-separated names)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	chosen, err := choose(*only)
	if err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return 2
	}
	docs, err := summaries(ctx, chosen)
	if err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return 1
	}
	if *list {
		for _, name := range chosen {
			fmt.Fprintf(stdout, "%-18s %s\n", name, docs[name])
		}
		return 0
	}

	fmt.Fprintf(stdout, "Building %d example programs...\n", len(chosen))
	dir, err := os.MkdirTemp("", "tablekit-tour-")
	if err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := build(ctx, dir, chosen, stderr); err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return 1
	}

	if os.Getenv(azurite.ConnectionStringEnv) == "" {
		fmt.Fprintln(stdout, "No "+azurite.ConnectionStringEnv+": starting Azurite (the first run installs it with npm, which can take a minute)...")
	}
	conn, stopAzurite, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return 1
	}
	defer stopAzurite()

	started := time.Now()
	failed, total := 0, int64(0)
	for i, name := range chosen {
		fmt.Fprintf(stdout, "\n== [%d/%d] %s: %s\n", i+1, len(chosen), name, docs[name])
		t0 := time.Now()
		cost, err := runExample(ctx, filepath.Join(dir, name), conn, stdout)
		total += cost
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "   FAILED: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "   ok in %.1fs\n", time.Since(t0).Seconds())
		}
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintf(stdout, "\nDone in %.1fs: %d of %d examples passed; %d storage transactions in all.\n",
		time.Since(started).Seconds(), len(chosen)-failed, len(chosen), total)
	if failed > 0 || ctx.Err() != nil {
		return 1
	}
	return 0
}

// choose returns the examples named in the comma-separated list only, or
// all of them when it is empty.
func choose(only string) ([]string, error) {
	if strings.TrimSpace(only) == "" {
		return examples, nil
	}
	var chosen []string
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, e := range examples {
			if e == name {
				chosen = append(chosen, e)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no example %q (examples: %s)", name, strings.Join(examples, ", "))
		}
	}
	return chosen, nil
}

// summaries returns each example's one-line summary: the first sentence of
// its package documentation, after "Command <name>".
func summaries(ctx context.Context, names []string) (map[string]string, error) {
	args := []string{"list", "-f", "{{.ImportPath}}\t{{.Doc}}"}
	for _, n := range names {
		args = append(args, modulePath+n)
	}
	out, err := exec.CommandContext(ctx, "go", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %v\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list (run the tour from the tablekit repository): %w", err)
	}
	docs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, doc, _ := strings.Cut(line, "\t")
		name := strings.TrimPrefix(path, modulePath)
		doc = strings.TrimPrefix(doc, "Command "+name+" ")
		docs[name] = strings.TrimSuffix(doc, ".")
	}
	return docs, nil
}

// build builds the examples' programs into dir, one binary per example.
func build(ctx context.Context, dir string, names []string, stderr io.Writer) error {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, modulePath+n)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build of the examples: %w", err)
	}
	return nil
}

// costLine is the last line of every example: what it cost.
var costLine = regexp.MustCompile(`^cost: (\d+) storage transactions`)

// runExample runs one example program against the account conn names,
// indenting what it prints, and returns the storage transactions it
// reported.
func runExample(ctx context.Context, path, conn string, stdout io.Writer) (int64, error) {
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = append(os.Environ(), azurite.ConnectionStringEnv+"="+conn)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var cost int64
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := costLine.FindStringSubmatch(line); m != nil {
			cost, _ = strconv.ParseInt(m[1], 10, 64)
		}
		fmt.Fprintln(stdout, "   "+line)
	}
	return cost, cmd.Wait()
}
