// Package azurite starts and stops a real Azurite, Microsoft's Azure Storage
// emulator, from Go: for tablekit's own tests and examples, and for the
// integration tests of programs built on tablekit.
//
// [Start] looks for an azurite executable on PATH; without one it installs
// the pinned Azurite [Version] with npm into a per-user cache folder on first
// use (once per cache, safe when several processes start at once; it says
// so in one line on stderr, as npm takes about a minute). It then
// runs Azurite with in-memory persistence on free loopback ports, waits until
// its blob, queue and table endpoints answer, and returns a [Server] whose
// [Server.ConnectionString] any Azure SDK client accepts. [Server.Stop]
// kills Azurite and leaves no process behind; on Linux, Azurite is also
// killed when the process that started it dies, so an interrupted test
// binary leaves nothing running either.
//
// Only Node.js 18 or later (with npm) is needed on the machine: tablekit's
// tests run on Node.js 18 and 20. Azurite 3.37.0's package.json asks for
// Node.js 22 (Azurite raises the number as Node.js releases reach their
// end of life, not for features tablekit uses): npm installs it with its
// engine check off. [Start] checks the node on PATH before any npm work,
// and refuses an older one with [ErrNodeNotFound], naming the version and
// path it found. The first install fetches about 65 MB with npm and takes
// 360 MB in the cache folder (about a minute on a fast connection).
//
// In a test:
//
//	func TestSomething(t *testing.T) {
//		srv := azurite.StartForTest(t, nil) // stopped when the test ends
//		client, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), nil)
//		...
//	}
//
// # The strict front
//
// Azurite enforces little of what Azure enforces. A [Front] is a reverse
// proxy in Go before Azurite ([Options.Front]) or before any storage
// endpoint ([NewFront]) that answers as Azure does where Azurite is
// lenient, with Azure's status codes and bodies (OData JSON for tables,
// with the error code in the body only, as the live services send it; XML
// for queues and blobs, with the x-ms-error-code header), shaped as
// Microsoft's recordings of the live services show them (FIDELITY.md in
// tablekit's repository lists each behaviour). Each behaviour is
// turned on or off in [FrontOptions]; the zero value enforces the limits
// and SAS ranges and neither throttles, delays, reorders nor pages as
// Azure may (the front spec "strict" adds Azure's paging):
//
//   - Entity limits (insert, update, merge, upsert, and every action of a
//     batch): keys without / \ # ? or control characters (400
//     OutOfRangeInput) and at most 1 KiB of UTF-16 (400
//     PropertyValueTooLarge); at most 252 custom properties (400
//     TooManyProperties); property names that are C# identifiers (400
//     PropertyNameInvalid) of at most 255 characters (400
//     PropertyNameTooLong), each once (400 DuplicatePropertiesSpecified);
//     strings of at most 32K UTF-16 units and binaries of at most 64 KiB
//     (400 PropertyValueTooLarge); DateTimes from 1601 (400
//     OutOfRangeInput); at most 1 MiB in the data model's size formula
//     (400 EntityTooLarge).
//   - Batches ($batch): at most 4 MiB (413 RequestBodyTooLarge); else a
//     failed changeset (202 Accepted, the failing action's error inside,
//     its index first: "99:" for more than 100 actions (InvalidInput),
//     "i:" for CommandsInBatchActOnDifferentPartitions, InvalidDuplicateRow
//     and the entity limits above, no index for PropertyValueTooLarge and
//     EntityTooLarge, as Azure sends them).
//   - Table SAS PartitionKey/RowKey ranges (spk, srk, epk, erk): a point
//     read outside the range gets 404 ResourceNotFound, a write or insert
//     403 AuthorizationFailure, a batch fails at its first action outside
//     it, and a query is narrowed to the range. Azurite still checks the
//     signature and permissions.
//   - Scalability targets ([ThrottleOptions]) as token buckets: entities
//     per second per table partition and requests per second per account
//     (Azure: 2,000 and 20,000), scaled down so that a laptop reaches them;
//     beyond them, 503 ServerBusy with Azure's message.
//   - Latency before every request, like a WAN round trip, so that
//     concurrency gains show locally.
//   - Cosmos DB for Table mode ([FrontOptions.Cosmos]): query results in an
//     order that is not key order (the same for the same seed), Cosmos
//     DB's limits where they differ, its error and batch answer shapes and
//     wording, its JSON continuation tokens, and merges tunnelled in a
//     batch (POST with X-HTTP-Method: MERGE), which Azurite ignores there.
//   - Continuation tokens shaped as the service's: Table storage's
//     "1!<n>!<base64>" (Azurite's own tokens wrapped so), or Cosmos DB's
//     {"token":...,"range":...} with NextRowKey "NA".
//   - Numbers: an Edm.Int64 beyond int64 gets 400 InvalidInput (Azurite
//     stores it), and in Cosmos mode so does an untyped whole number
//     beyond int64.
//   - Azure's paging ([FrontOptions.Paging]): pages cut short at a partition
//     boundary or anywhere (as after the 5 s a query may run on the
//     server), empty pages that carry a continuation token, and a token on
//     the last page, seeded and deterministic, with no real waits.
//
// [Front.Stats] counts what the front did. [ParseFrontSpec] reads the
// options from a short text such as "strict,throttle=0.05"; tablekit's
// tests read it from TABLEKIT_FRONT.
//
// # Cosmos DB mode
//
// With [FrontOptions.Cosmos], the table endpoint behaves like Azure Cosmos
// DB for Table where that differs from Table storage:
//   - query results come in an order that is not key order ("Query results
//     returned by the API for Table aren't sorted in partition key/row key
//     order"), the same for the same [FrontOptions.Seed], across every page
//     of a query; every entity is placed independently, as the
//     documentation promises no order at all;
//   - its limits: a RowKey of at most 255 bytes, a batch of at most 2 MB,
//     an entity of at most 2 MB of JSON (instead of 1 MiB in the size
//     formula), no 64 KiB property limit, and the reserved property names
//     Id, rid, etag and ResourceId refused. The other limits stay Table
//     storage's (a stricter front is safe for tests);
//   - its answers' shapes, as recorded from the live service (see
//     front_answer.go): errors, batch answers, JSON continuation tokens.
//
// Table names are case-sensitive on Cosmos DB: Azurite addresses a table
// by its exact name too (another case gets 404 TableNotFound), but it
// refuses to create a table whose name differs from an existing one's only
// in case, which Cosmos DB allows.
//
// Each query is run to its end against the target and paged by the front
// (pages of $top entities, 1,000 by default, with the front's own
// continuation tokens): fine for tests, not for large tables.
//
// # Azure's paging
//
// Azurite always answers full pages ($top entities, 1,000 by default)
// until the last. Azure ends a page early when the query has run for 5
// seconds on the server or reaches a partition boundary, and then returns
// a continuation token even with no entities. So, through a front with
// [FrontOptions.Paging]:
//   - a page may hold no entity and carry a continuation token (never more
//     than two such pages in a row at one position);
//   - a page may end at a partition boundary, or anywhere, before $top
//     entities, with a continuation token;
//   - the last page of a query may carry a continuation token, and the
//     page it leads to is empty without one.
//
// Its continuation tokens are the front's own, in the shape of Table
// storage's (or, in Cosmos mode, Cosmos DB's): see front_answer.go.
//
// A point query (PartitionKey eq and RowKey eq) is answered whole, as the
// service looks its entity up at once. Which pages are cut is decided from
// [FrontOptions.Seed], the query ($filter, $select, $top) and its position
// in the results, so the same query over the same entities pages the same
// way every time, in any table; no answer waits. Each entity still comes
// exactly once over a query's pages, in the order the target (or Cosmos
// mode) gives, also when entities are inserted or deleted between pages.
package azurite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is the Azurite version installed from npm when no azurite
// executable is on PATH.
const Version = "3.37.0"

// AccountName is the storage account Azurite serves.
const AccountName = "devstoreaccount1"

// AccountKey is the well-known shared key of [AccountName]. It is public
// and only good for the emulator.
const AccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// Options configures [Start]. The zero value (or a nil *Options) is the
// usual choice.
type Options struct {
	// CacheDir is the folder the pinned Azurite is installed into, in a
	// subfolder per version. "" means $TABLEKIT_AZURITE_DIR if set, else
	// "tablekit" in the user's cache folder ([os.UserCacheDir]).
	CacheDir string

	// Executable, if set, is the Azurite to run instead of one found on
	// PATH or installed: the azurite executable or its azurite.js entry
	// point.
	Executable string

	// Args are extra command-line arguments for Azurite, e.g. "--loose",
	// or "--debug", "/tmp/azurite-debug.log" for a full log of its work
	// ([Server.Output] keeps the end of what it prints).
	Args []string

	// Front, if not nil, puts a front with these options (see [NewFront])
	// before the started Azurite: the Server's endpoints and connection
	// string are then the front's, and [Server.Direct] gives Azurite's own.
	Front *FrontOptions

	// For this package's tests: never use an azurite on PATH, bound the
	// wait for the endpoints, say "installing" here instead of os.Stderr.
	skipPath     bool
	startTimeout time.Duration
	notice       io.Writer
}

// Server is a running Azurite. Its methods are safe for concurrent use.
type Server struct {
	blobPort, queuePort, tablePort int

	cmd     *exec.Cmd
	out     *tailBuffer
	workDir string
	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error         // set before done is closed

	front *Front // nil without Options.Front

	mu      sync.Mutex
	stopped bool
	stopErr error
}

const (
	defaultStartTimeout = time.Minute
	portAttempts        = 5
	outputLimit         = 64 << 10
)

// opError names the exported operation that failed, so that every error
// of the package reads "azurite: <Op>: ...", as tablekit's do.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "azurite: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "azurite: ")
}

func (e *opError) Unwrap() error { return e.err }

// opErr names op in err (nil stays nil; an error naming an operation
// already keeps it).
func opErr(op string, err error) error {
	var oe *opError
	if err == nil || errors.As(err, &oe) {
		return err
	}
	return &opError{op, err}
}

// errNotMade is the error of op on a zero value, which only maker makes.
func errNotMade(op, maker string) error {
	return opErr(op, fmt.Errorf("invalid input: the value was not made by azurite.%s", maker))
}

// errPortInUse marks a start that failed because a chosen port was taken
// between choosing it and Azurite binding it; Start retries with new ports.
var errPortInUse = errors.New("azurite: port already in use")

// Start starts an Azurite and returns once its blob, queue and table
// endpoints answer. ctx bounds the installation (first use only) and the
// start; cancelling it later does not stop the server: call [Server.Stop].
func Start(ctx context.Context, opts *Options) (_ *Server, err error) {
	defer func() { err = opErr("Start", err) }()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.startTimeout <= 0 {
		o.startTimeout = defaultStartTimeout
	}
	prog, args, err := resolveCommand(ctx, &o, exec.LookPath)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(3)
		if err != nil {
			return nil, fmt.Errorf("azurite: cannot find free loopback ports: %w", err)
		}
		srv, err := launch(ctx, &o, prog, args, ports[0], ports[1], ports[2])
		if err == nil {
			if o.Front != nil {
				srv.front, err = NewFront(ctx, srv.Direct(), o.Front)
				if err != nil {
					srv.Stop()
					return nil, err
				}
			}
			return srv, nil
		}
		if !errors.Is(err, errPortInUse) || attempt == portAttempts {
			return nil, err
		}
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// They are only likely to stay free: the caller retries on a clash.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// launch starts one Azurite process on the given ports and waits for it.
func launch(ctx context.Context, o *Options, prog string, baseArgs []string, blobPort, queuePort, tablePort int) (*Server, error) {
	workDir, err := os.MkdirTemp("", "tablekit-azurite-")
	if err != nil {
		return nil, fmt.Errorf("azurite: %w", err)
	}
	args := append([]string(nil), baseArgs...)
	args = append(args,
		"--inMemoryPersistence",
		"--disableTelemetry",
		"--skipApiVersionCheck",
		"--silent",
		"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(blobPort),
		"--queueHost", "127.0.0.1", "--queuePort", strconv.Itoa(queuePort),
		"--tableHost", "127.0.0.1", "--tablePort", strconv.Itoa(tablePort),
	)
	args = append(args, o.Args...)

	s := &Server{
		blobPort:  blobPort,
		queuePort: queuePort,
		tablePort: tablePort,
		out:       &tailBuffer{limit: outputLimit},
		workDir:   workDir,
		done:      make(chan struct{}),
	}
	cmd := exec.Command(prog, args...)
	// In-memory Azurite writes nothing, but --inMemoryPersistence refuses
	// --location, so give it an empty working folder of its own.
	cmd.Dir = workDir
	cmd.Stdout = s.out
	cmd.Stderr = s.out
	cmd.WaitDelay = 2 * time.Second
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(workDir)
		return nil, fmt.Errorf("azurite: cannot run %s: %w", prog, err)
	}
	s.cmd = cmd
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()

	if err := s.waitReady(ctx, o.startTimeout); err != nil {
		s.kill()
		<-s.done
		os.RemoveAll(workDir)
		return nil, err
	}
	return s, nil
}

// waitReady waits until Azurite has said it listens on all three ports and
// each answers an HTTP request.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	probe := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	}
	defer probe.CloseIdleConnections()
	for {
		select {
		case <-s.done:
			out := s.out.String()
			if strings.Contains(out, "EADDRINUSE") {
				return fmt.Errorf("%w: %s", errPortInUse, lastLine(out))
			}
			return fmt.Errorf("azurite: Azurite exited before it was ready (%v); its output:\n%s", s.waitErr, out)
		case <-ctx.Done():
			return fmt.Errorf("azurite: waiting for Azurite to start: %w", ctx.Err())
		case <-timer.C:
			return fmt.Errorf("azurite: Azurite did not answer on 127.0.0.1 ports %d (blob), %d (queue), %d (table) within %v; its output:\n%s",
				s.blobPort, s.queuePort, s.tablePort, timeout, s.out.String())
		case <-tick.C:
			if s.ready(ctx, probe) {
				return nil
			}
		}
	}
}

// ready reports whether this process announced all three ports and each
// answers HTTP. Checking the announcement as well as the port makes sure
// the answer comes from this Azurite and not another process that took a
// port first.
func (s *Server) ready(ctx context.Context, probe *http.Client) bool {
	select {
	case <-s.done:
		return false
	default:
	}
	out := s.out.String()
	for _, p := range []int{s.blobPort, s.queuePort, s.tablePort} {
		if !announced(out, p) {
			return false
		}
	}
	for _, u := range []string{endpoint(s.blobPort), endpoint(s.queuePort), endpoint(s.tablePort) + "/Tables"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false
		}
		resp, err := probe.Do(req)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return true
}

// announced reports whether Azurite's output has a line saying it is
// listening on 127.0.0.1:port ("... successfully listening at http://127.0.0.1:10000").
func announced(out string, port int) bool {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for line := range strings.Lines(out) {
		if !strings.Contains(line, "listening") {
			continue
		}
		i := strings.Index(line, addr)
		if i < 0 {
			continue
		}
		rest := line[i+len(addr):]
		if rest == "" || rest[0] < '0' || rest[0] > '9' {
			return true
		}
	}
	return false
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// ConnectionString returns a connection string for this server (its
// front, if it has one) with the well-known account and explicit
// endpoints, e.g.
// "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=...;BlobEndpoint=http://127.0.0.1:PORT/devstoreaccount1;...".
func (s *Server) ConnectionString() string {
	if s == nil || s.cmd == nil {
		return "" // not made by Start
	}
	return s.Endpoints().ConnectionString(AccountName, AccountKey)
}

// Endpoints returns the service URLs clients should use: the front's if
// the server has one, else Azurite's own ([Server.Direct]).
func (s *Server) Endpoints() Endpoints {
	if s == nil || s.cmd == nil {
		return Endpoints{}
	}
	if s.front != nil {
		return s.front.Endpoints()
	}
	return s.Direct()
}

// Direct returns Azurite's own service URLs, which bypass the front.
func (s *Server) Direct() Endpoints {
	if s == nil || s.cmd == nil {
		return Endpoints{}
	}
	return Endpoints{Blob: endpoint(s.blobPort), Queue: endpoint(s.queuePort), Table: endpoint(s.tablePort)}
}

// Front returns the server's front, or nil if it was started without one.
func (s *Server) Front() *Front {
	if s == nil {
		return nil
	}
	return s.front
}

func endpoint(port int) string {
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/" + AccountName
}

// Output returns the end of what Azurite has printed (up to 64 KiB).
func (s *Server) Output() string {
	if s == nil || s.out == nil {
		return ""
	}
	return s.out.String()
}

// Stop closes the server's front (if any), kills Azurite (its whole
// process group), waits for it to exit and removes its working folder. It returns an error if Azurite had already
// exited on its own. Calling Stop again returns the first call's result.
func (s *Server) Stop() error {
	if s == nil || s.cmd == nil {
		return errNotMade("Server.Stop", "Start")
	}
	return opErr("Server.Stop", s.stop())
}

// stop is Stop on a Server made by Start.
func (s *Server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.stopErr
	}
	if s.front != nil {
		s.stopErr = s.front.Close()
	}
	select {
	case <-s.done:
		s.stopErr = fmt.Errorf("azurite: Azurite had exited before Stop (%v); its output:\n%s", s.waitErr, s.out.String())
	default:
	}
	s.kill()
	<-s.done
	if err := os.RemoveAll(s.workDir); err != nil && s.stopErr == nil {
		s.stopErr = fmt.Errorf("azurite: %w", err)
	}
	s.stopped = true
	return s.stopErr
}

// kill sends SIGKILL to Azurite's process group (or the process, where
// there are no process groups).
func (s *Server) kill() {
	killTree(s.cmd)
}

// tailBuffer keeps the last limit bytes written to it. It is safe for
// concurrent use.
type tailBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.limit; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
