// Package conformance probes a table endpoint (Azure Table storage, Azure
// Cosmos DB for Table, Azurite, package azurite's front, an emulator or a
// proxy) for the behaviours tablekit depends on, and says for each whether
// the endpoint behaves as the live service does (as Microsoft's recordings
// of it show, see FIDELITY.md), differs, or cannot be probed with the
// credential given. It is the library of "tablekit conformance".
//
// A run creates one table of its own (a fresh name, "TkConf" and random
// hex), writes and reads entities in it, and deletes it at the end, also
// after a failure or a cancelled context; nothing else in the account is
// read or written. Every probe's requests are counted by the Account's
// Meter and bounded in advance: a run sends at most [Bound] requests, no
// request is retried, and the report gives the count.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/sas"
)

// Outcome is what a probe found.
type Outcome int

// The outcomes.
const (
	AsExpected    Outcome = iota // behaves as the live service does
	Differs                      // behaves otherwise: Detail says how
	NotApplicable                // cannot be probed here: Detail says why
)

// String returns the outcome as the report prints it.
func (o Outcome) String() string {
	switch o {
	case AsExpected:
		return "as expected"
	case Differs:
		return "differs"
	case NotApplicable:
		return "not applicable"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result is one probed behaviour.
type Result struct {
	// Behaviour names it, e.g. "transaction failure reporting".
	Behaviour string
	Outcome   Outcome
	// Detail says how the endpoint differs or why the probe does not
	// apply; for an expected outcome, what was seen where that varies
	// between services (e.g. the continuation token's shape).
	Detail string
}

// String is the result's report line.
func (r Result) String() string {
	line := fmt.Sprintf("%-41s %s", r.Behaviour, r.Outcome)
	if r.Detail != "" {
		line += ": " + r.Detail
	}
	return line
}

// Report is the outcome of a [Run].
type Report struct {
	// Service is the kind of service the endpoint was probed as: "Azure
	// Table storage" or "Azure Cosmos DB for Table".
	Service string
	// Table is the table the run created (and deleted).
	Table string
	// Results are the probed behaviours, in order.
	Results []Result
	// Requests is the number of requests the run sent (storage
	// transactions, as the service bills them); Bound is the most it
	// could have sent.
	Requests, Bound int64
	// Deleted says nothing the run created is left: its table was
	// deleted at the end, or never created.
	Deleted bool
}

// WriteTo writes the report, one line per behaviour and a summary.
func (r *Report) WriteTo(w io.Writer) (int64, error) {
	var n int64
	out := func(format string, args ...any) error {
		m, err := fmt.Fprintf(w, format, args...)
		n += int64(m)
		return err
	}
	if err := out("probed as %s, in table %s\n", r.Service, r.Table); err != nil {
		return n, err
	}
	for _, res := range r.Results {
		if err := out("%s\n", res); err != nil {
			return n, err
		}
	}
	left := "deleted"
	if !r.Deleted {
		left = "NOT deleted: delete it by hand"
	}
	err := out("cost: %d transactions (at most %d); table %s %s\n", r.Requests, r.Bound, r.Table, left)
	return n, err
}

// Options configures a [Run]. A nil *Options means defaults.
type Options struct {
	// Cosmos probes the endpoint as Azure Cosmos DB for Table: the
	// expectations are Cosmos DB's where they differ from Table
	// storage's. The default is what the Account finds out by the time
	// the probe table is created (tablekit.ServiceAuto: the endpoint's
	// host, then its answers).
	Cosmos bool
	// OnResult, if not nil, is called with each result as it comes.
	OnResult func(Result)
}

// probe is one probed behaviour: its name, the most requests it sends,
// and the probing.
type probe struct {
	name string
	cost int
	run  func(ctx context.Context, p *prober) Result
}

// setupCost is the requests a run spends besides its probes: creating
// and deleting its table.
const setupCost = 2

// Bound is the most requests one Run sends.
func Bound() int64 {
	n := int64(setupCost)
	for _, p := range probes {
		n += int64(p.cost)
	}
	return n
}

// prober is the state of one run.
type prober struct {
	acct   *tablekit.Account
	cosmos bool
	name   string                           // the run's table
	tbl    *tablekit.Table[tablekit.Entity] // tablekit's view of it
	raw    *aztables.Client                 // for requests tablekit refuses to send
	signer *sas.Signer                      // nil without an account key
}

// noRetries turns azcore's retries off: a probe's requests are counted
// and bounded, and a throttled probe is reported, not repeated.
var noRetries = policy.RetryOptions{MaxRetries: -1}

// Run probes the table endpoint that endpoint names: a connection string,
// or an account SAS URL ("https://<account>.table.core.windows.net/?sv=...",
// which must allow creating and deleting tables and entities). It returns
// the report also when probes failed; an error means the run could not
// start (a bad endpoint, or the table could not be created) or could not
// delete its table (the report names it).
func Run(ctx context.Context, endpoint string, opts *Options) (*Report, error) {
	if opts == nil {
		opts = &Options{}
	}
	acct, err := open(endpoint, opts.Cosmos)
	if err != nil {
		return nil, err
	}
	p := &prober{acct: acct, name: newTableName()}
	if !strings.HasPrefix(endpoint, "https://") && !strings.HasPrefix(endpoint, "http://") {
		p.signer, _ = sas.NewSigner(endpoint) // fails without an AccountKey: the SAS probe says so
	}
	rep := &Report{Service: "Azure Table storage", Table: p.name, Bound: Bound()}
	before := acct.Meter().Snapshot()
	defer func() { rep.Requests = acct.Meter().Snapshot().Sub(before).Service("table") }()

	if p.tbl, err = tablekit.OpenTable[tablekit.Entity](acct, p.name, nil); err != nil {
		return rep, err
	}
	p.raw = acct.Tables().NewClient(p.name)
	if err := p.tbl.CreateIfNotExists(ctx); err != nil {
		var se *tablekit.ServiceError
		if errors.As(err, &se) && se.StatusCode >= 400 && se.StatusCode < 500 && se.StatusCode != http.StatusRequestTimeout {
			rep.Deleted = true // refused: there is no table
		} else {
			// The create may have happened with its answer lost: delete.
			rep.Deleted = p.cleanup(ctx) == nil
		}
		return rep, fmt.Errorf("creating the probe table %s: %w", p.name, err)
	}
	// Cosmos DB's answer to the create shows it (a new table's ETag).
	if p.cosmos = acct.Service() == tablekit.ServiceCosmosDB; p.cosmos {
		rep.Service = "Azure Cosmos DB for Table"
	}
	for _, pr := range probes {
		if ctx.Err() != nil {
			break
		}
		res := pr.run(ctx, p)
		res.Behaviour = pr.name
		rep.Results = append(rep.Results, res)
		if opts.OnResult != nil {
			opts.OnResult(res)
		}
	}
	cerr := p.cleanup(ctx)
	rep.Deleted = cerr == nil
	if cerr != nil {
		return rep, fmt.Errorf("deleting the probe table %s: %w", p.name, cerr)
	}
	return rep, ctx.Err()
}

// open opens the account endpoint names, with no retries.
func open(endpoint string, cosmos bool) (*tablekit.Account, error) {
	o := &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: noRetries}}
	if cosmos {
		o.Service = tablekit.ServiceCosmosDB
	}
	if !strings.HasPrefix(endpoint, "https://") && !strings.HasPrefix(endpoint, "http://") {
		return tablekit.Open(endpoint, o)
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.RawQuery == "" {
		return nil, errors.New("conformance: the SAS URL is not a URL with a SAS query")
	}
	if strings.Trim(u.Path, "/") != "" && !isAccountPath(u) {
		return nil, errors.New("conformance: a table SAS URL cannot create the probe's own table: give an account SAS URL (https://<account>.table.core.windows.net/?sv=...) or a connection string")
	}
	// The probes use the table endpoint only; tablekit.Open wants all
	// three, so the others name it too (never contacted).
	base := u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/")
	return tablekit.Open("TableEndpoint="+base+";QueueEndpoint="+base+";BlobEndpoint="+base+";SharedAccessSignature="+u.RawQuery, o)
}

// isAccountPath reports whether a URL's path is an emulator's account
// path ("/devstoreaccount1") rather than a table.
func isAccountPath(u *url.URL) bool {
	host := u.Hostname()
	return (host == "127.0.0.1" || host == "localhost") && !strings.Contains(strings.Trim(u.Path, "/"), "/")
}

// cleanup deletes the run's table, also when ctx has ended.
func (p *prober) cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	err := p.tbl.DeleteTable(ctx)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil
	}
	return err
}

// newTableName returns a fresh table name in mixed case (the table-name
// probe reads it in another case).
func newTableName() string {
	var b [5]byte
	rand.Read(b[:])
	return "TkConf" + hex.EncodeToString(b[:])
}

// Helpers for the probes.

func asExpected(detail string, args ...any) Result {
	return Result{Outcome: AsExpected, Detail: fmt.Sprintf(detail, args...)}
}

func differs(detail string, args ...any) Result {
	return Result{Outcome: Differs, Detail: fmt.Sprintf(detail, args...)}
}

func notApplicable(detail string, args ...any) Result {
	return Result{Outcome: NotApplicable, Detail: fmt.Sprintf(detail, args...)}
}

// status describes the answer an error carries: "404 ResourceNotFound", or
// the error itself when it is not the service's.
func status(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
	}
	if err == nil {
		return "success"
	}
	return err.Error()
}

// responseOf returns the service's answer under err, or nil.
func responseOf(err error) *http.Response {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.RawResponse
	}
	return nil
}
