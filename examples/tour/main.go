// Command tour builds tablekit's examples (examples/<name>, each a plain
// program to read and copy) and runs them, one after the other, against the
// account in AZURE_STORAGE_CONNECTION_STRING or an Azurite it starts. It
// prints what each said and what it cost. Each example cleans up after
// itself, so the tour can run against a shared account. From the
// repository's root:
//
//	go run ./examples/tour             # run every example
//	go run ./examples/tour -list       # list the examples
//	go run ./examples/tour -run basics # run some (comma-separated names)
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tablekit/tablekit/azurite"
)

const modulePath = "github.com/tablekit/tablekit/examples/" // the examples' import path

// examples are the tour's programs, in the order it runs them: from the
// typed core to the patterns that build on it.
var examples = []string{
	"basics", "queries", "compoundkey", "secondaryindex", "indexentities", "archive",
	"tracing", "logtail", "bloblog", "wideentities", "largeentities", "dataseries",
	"highvolumedelete", "timeline", "heterogeneous", "denormalization", "encryption", "sas",
	"coordination", "cqrs",
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
	chosen := examples
	if *only != "" {
		chosen = nil
		for name := range strings.SplitSeq(*only, ",") {
			if name = strings.TrimSpace(name); !slices.Contains(examples, name) {
				fmt.Fprintf(stderr, "tour: no example %q (examples: %s)\n", name, strings.Join(examples, ", "))
				return 2
			}
			chosen = append(chosen, name)
		}
	}
	if err := tour(ctx, chosen, *list, stdout); err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return 1
	}
	return 0
}

// tour lists the chosen examples, or builds and runs them.
func tour(ctx context.Context, chosen []string, list bool, stdout io.Writer) error {
	var paths []string // and each one's summary: the first sentence of its package doc
	for _, n := range chosen {
		paths = append(paths, modulePath+n)
	}
	out, err := exec.CommandContext(ctx, "go", append([]string{"list", "-f", "{{.ImportPath}}\t{{.Doc}}"}, paths...)...).Output()
	if err != nil {
		return fmt.Errorf("go list (run the tour from the tablekit repository): %w", err)
	}
	docs := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, doc, _ := strings.Cut(strings.TrimSpace(line), "\t")
		name := strings.TrimPrefix(path, modulePath)
		docs[name] = strings.TrimSuffix(strings.TrimPrefix(doc, "Command "+name+" "), ".")
	}
	if list {
		for _, name := range chosen {
			fmt.Fprintf(stdout, "%-18s %s\n", name, docs[name])
		}
		return nil
	}
	fmt.Fprintf(stdout, "Building %d example programs...\n", len(chosen))
	dir, err := os.MkdirTemp("", "tablekit-tour-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + string(filepath.Separator)}, paths...)...)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build of the examples: %v\n%s", err, out)
	}
	conn, stopAzurite, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		return err
	}
	defer stopAzurite()
	started, failed, total := time.Now(), 0, int64(0)
	for i := 0; i < len(chosen) && ctx.Err() == nil; i++ {
		name := chosen[i]
		fmt.Fprintf(stdout, "\n== [%d/%d] %s: %s\n", i+1, len(chosen), name, docs[name])
		t0 := time.Now()
		cost, err := runExample(ctx, filepath.Join(dir, name), conn, stdout)
		total += cost
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "   FAILED: %v\n", err)
			continue
		}
		fmt.Fprintf(stdout, "   ok in %.1fs\n", time.Since(t0).Seconds())
	}
	fmt.Fprintf(stdout, "\nDone in %.1fs: %d of %d examples passed; %d storage transactions in all.\n",
		time.Since(started).Seconds(), len(chosen)-failed, len(chosen), total)
	if failed > 0 || ctx.Err() != nil {
		return fmt.Errorf("%d of %d examples failed (%v)", failed, len(chosen), ctx.Err())
	}
	return nil
}

// runExample runs one example program against the account conn names,
// indenting what it prints, and returns the cost it reported.
func runExample(ctx context.Context, path, conn string, stdout io.Writer) (cost int64, err error) {
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = append(os.Environ(), azurite.ConnectionStringEnv+"="+conn)
	r, w := io.Pipe()
	defer r.Close()
	cmd.Stdout, cmd.Stderr = w, w
	go func() { w.CloseWithError(cmd.Run()) }() // nil: the reader gets io.EOF
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fmt.Sscanf(sc.Text(), "cost: %d storage transactions", &cost) // every example's last line
		fmt.Fprintln(stdout, "   "+sc.Text())
	}
	return cost, sc.Err()
}
