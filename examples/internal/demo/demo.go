// Package demo runs tablekit's pattern examples: it connects to a storage
// account (the one in AZURE_STORAGE_CONNECTION_STRING, the one named by
// AZURE_STORAGE_ACCOUNT with DefaultAzureCredential, or an Azurite it
// starts), runs sections that narrate each step, prints what each section
// cost in storage transactions, and cleans up what the sections created.
//
// examples/<pattern>/main.go calls [Main] with its section; examples/tour
// runs them all.
package demo

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
)

// Section is one runnable example: usually one pattern of the design guide.
type Section struct {
	// Name selects the section with -run; lowercase, no spaces.
	Name string
	// Description says in one line what the section shows.
	Description string
	// Run runs the section. It narrates with env.Say, names its tables,
	// queues and containers with env's name helpers and registers their
	// removal with env.Defer.
	Run func(ctx context.Context, env *Env) error
}

// Env is what a section runs with.
type Env struct {
	// Account is the storage account; its Meter counts what each section
	// costs.
	Account *tablekit.Account
	// Out receives the narration.
	Out io.Writer
	// Reopen opens the same account again with other options (for a
	// section that needs, e.g., tracing); nil when the runner cannot.
	Reopen func(opts *tablekit.Options) (*tablekit.Account, error)
	suffix string
	defers []func(context.Context) error
}

// Say narrates one step of a section.
func (e *Env) Say(format string, args ...any) {
	fmt.Fprintf(e.Out, "   - "+format+"\n", args...)
}

// TableName returns base (letters and digits) made unique to this run.
func (e *Env) TableName(base string) string { return base + e.suffix }

// QueueName returns base (lowercase letters, digits, hyphens) made unique
// to this run; it is a valid container name too.
func (e *Env) QueueName(base string) string { return base + "-" + e.suffix }

// ContainerName is QueueName for blob containers.
func (e *Env) ContainerName(base string) string { return e.QueueName(base) }

// Defer registers a clean-up step, run when the section ends (also when it
// fails), the last registered first.
func (e *Env) Defer(f func(ctx context.Context) error) { e.defers = append(e.defers, f) }

// Main runs the given sections as a program: flags -list and -run, then
// os.Exit with 0 only if every chosen section passed.
func Main(sections ...Section) {
	os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr, sections))
}

// Run is Main without the exit: it returns the exit code.
func Run(args []string, stdout, stderr io.Writer, all []Section) int {
	flags := flag.NewFlagSet(progName(), flag.ContinueOnError)
	flags.SetOutput(stderr)
	list := flags.Bool("list", false, "list the sections and exit")
	only := flags.String("run", "", "run only these sections (comma-separated names)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *list {
		for _, s := range all {
			fmt.Fprintf(stdout, "%-18s %s\n", s.Name, s.Description)
		}
		return 0
	}
	chosen, err := choose(all, *only)
	if err != nil {
		fmt.Fprintln(stderr, progName()+":", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	acct, where, reopen, closeAccount, err := connect(ctx, stdout)
	if err != nil {
		fmt.Fprintln(stderr, progName()+":", err)
		return 1
	}
	defer closeAccount()
	fmt.Fprintf(stdout, "Connected to %s (account %q).\n", where, acct.Name())

	e := &Env{Account: acct, Out: stdout, Reopen: reopen, suffix: randomSuffix()}
	failed := 0
	started := time.Now()
	total := acct.Meter().Snapshot()
	for i, s := range chosen {
		fmt.Fprintf(stdout, "\n== [%d/%d] %s: %s\n", i+1, len(chosen), s.Name, s.Description)
		before := acct.Meter().Snapshot()
		t0 := time.Now()
		err := runSection(ctx, e, s)
		cost := acct.Meter().Snapshot().Sub(before)
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "   FAILED: %v\n", err)
		}
		fmt.Fprintf(stdout, "   cost: %d storage transactions (%v) in %.1fs\n", cost.Total(), cost, time.Since(t0).Seconds())
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintf(stdout, "\nDone in %.1fs: %d of %d sections passed; %d storage transactions in all.\n",
		time.Since(started).Seconds(), len(chosen)-failed, len(chosen), acct.Meter().Snapshot().Sub(total).Total())
	if failed > 0 || ctx.Err() != nil {
		return 1
	}
	return 0
}

func progName() string {
	if len(os.Args) > 0 {
		name := os.Args[0]
		if i := strings.LastIndexAny(name, `/\`); i >= 0 {
			name = name[i+1:]
		}
		return name
	}
	return "demo"
}

// choose returns the sections named in the comma-separated list only, or
// all of them if it is empty.
func choose(all []Section, only string) ([]Section, error) {
	if strings.TrimSpace(only) == "" {
		return all, nil
	}
	var chosen []Section
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, s := range all {
			if s.Name == name {
				chosen = append(chosen, s)
				found = true
				break
			}
		}
		if !found {
			var names []string
			for _, s := range all {
				names = append(names, s.Name)
			}
			return nil, fmt.Errorf("no section %q (sections: %s)", name, strings.Join(names, ", "))
		}
	}
	return chosen, nil
}

// runSection runs one section and then its clean-up steps.
func runSection(ctx context.Context, e *Env, s Section) (err error) {
	e.defers = nil
	defer func() {
		// Clean up even if ctx was cancelled (Ctrl-C), within a time limit.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for i := len(e.defers) - 1; i >= 0; i-- {
			if cerr := e.defers[i](cctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean-up: %w", cerr))
			}
		}
		e.defers = nil
	}()
	return s.Run(ctx, e)
}

// connect opens the account and returns it, a description of where it is,
// a function that opens it again with other options, and a function that
// releases it (stopping Azurite if started).
func connect(ctx context.Context, out io.Writer) (*tablekit.Account, string, func(*tablekit.Options) (*tablekit.Account, error), func(), error) {
	if cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); cs != "" {
		reopen := func(o *tablekit.Options) (*tablekit.Account, error) { return tablekit.Open(cs, o) }
		acct, err := reopen(nil)
		if err != nil {
			return nil, "", nil, nil, err
		}
		return acct, "the account in AZURE_STORAGE_CONNECTION_STRING", reopen, func() {}, nil
	}
	if name := os.Getenv("AZURE_STORAGE_ACCOUNT"); name != "" {
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, "", nil, nil, fmt.Errorf("signing in for AZURE_STORAGE_ACCOUNT=%s: %w", name, err)
		}
		reopen := func(o *tablekit.Options) (*tablekit.Account, error) {
			return tablekit.OpenWithCredential(name, cred, o)
		}
		acct, err := reopen(nil)
		if err != nil {
			return nil, "", nil, nil, err
		}
		return acct, "storage account " + name + " (DefaultAzureCredential)", reopen, func() {}, nil
	}

	fmt.Fprintln(out, "No AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT: starting Azurite")
	fmt.Fprintln(out, "(the first run installs Azurite "+azurite.Version+" with npm, which can take a minute)...")
	started := time.Now()
	srv, err := azurite.Start(ctx, nil)
	if err != nil {
		return nil, "", nil, nil, err
	}
	reopen := func(o *tablekit.Options) (*tablekit.Account, error) { return tablekit.Open(srv.ConnectionString(), o) }
	acct, err := reopen(nil)
	if err != nil {
		srv.Stop()
		return nil, "", nil, nil, err
	}
	blob, queue, table := srv.Ports()
	where := fmt.Sprintf("Azurite on 127.0.0.1 (blob %d, queue %d, table %d; started in %.1fs)",
		blob, queue, table, time.Since(started).Seconds())
	return acct, where, reopen, func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, progName()+":", err)
		}
	}, nil
}

// randomSuffix returns 6 random lowercase letters and digits.
func randomSuffix() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	rand.Read(b)
	for i, c := range b {
		b[i] = alphabet[int(c)%len(alphabet)]
	}
	return string(b)
}

// NewEnv returns an Env over acct that narrates to out, for running
// sections from tests.
func NewEnv(acct *tablekit.Account, out io.Writer) *Env {
	return &Env{Account: acct, Out: out, suffix: randomSuffix()}
}

// RunSection runs one section in env, then its clean-up steps, and returns
// the first error.
func RunSection(ctx context.Context, env *Env, s Section) error { return runSection(ctx, env, s) }
