// Package testenv gives tablekit's tests a real storage account: the one in
// AZURE_STORAGE_CONNECTION_STRING if set, else an Azurite shared by all the
// tests of one test binary, started on first use (see package azurite).
//
// Every test package that uses it calls [Main] from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// and each test makes its own tables, queues and containers with unique
// names ([NewTable], [NewQueue], [NewContainer]), which are deleted when the
// test ends.
//
// With TABLEKIT_FRONT set (see [FrontEnv]), the Azurite is started behind
// package azurite's strict front, so the same tests meet Azure's limits
// and paging:
//
//	TABLEKIT_FRONT=strict go test ./ ./patterns
package testenv

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/wire"
)

// ConnectionStringEnv names the environment variable that points the tests
// at a real account instead of Azurite.
const ConnectionStringEnv = "AZURE_STORAGE_CONNECTION_STRING"

// FrontEnv names the environment variable that puts package azurite's
// front before the tests' Azurite. Its value is a front spec
// ([azurite.ParseFrontSpec]): "strict" turns on Azure's entity and batch
// limits, SAS PartitionKey/RowKey ranges and Azure's paging (short and
// empty pages, seeded), and neither throttles, delays nor reorders, so
// functional tests stay deterministic; add "throttle=0.05",
// "latency=20ms" or "cosmos" for more. Unset, empty or
// "off": no front. It is ignored when AZURE_STORAGE_CONNECTION_STRING is
// set (a real account enforces Azure's rules itself).
const FrontEnv = "TABLEKIT_FRONT"

// startTimeout bounds installing (first use on a machine) and starting
// Azurite.
const startTimeout = 10 * time.Minute

// opTimeout bounds the create and delete calls made for a test.
const opTimeout = time.Minute

// shared is the Azurite of this test binary.
var shared struct {
	once    sync.Once
	mu      sync.Mutex
	server  *azurite.Server
	connStr string
	err     error
}

// Main runs the tests of m, then calls cleanups (e.g. stopping what a
// package's godoc Examples started) and stops the shared Azurite (if one
// was started), and exits with the tests' exit code. Call it from TestMain.
func Main(m *testing.M, cleanups ...func() error) {
	code := m.Run()
	for _, c := range cleanups {
		if err := c(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	shared.mu.Lock()
	srv := shared.server
	shared.server = nil
	shared.mu.Unlock()
	if srv != nil {
		if f := srv.Front(); f != nil {
			s := f.Stats()
			fmt.Fprintf(os.Stderr, "testenv: %s=%s: %d requests, %d refused for Azure's limits, %d outside a SAS range, %d throttled\n",
				FrontEnv, os.Getenv(FrontEnv), s.Requests, s.LimitRejected, s.SASRejected, s.Throttled)
		}
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// ConnectionString returns AZURE_STORAGE_CONNECTION_STRING if it is set,
// else the connection string of the test binary's Azurite, started on the
// first call. It fails t if Azurite cannot start.
func ConnectionString(t testing.TB) string {
	t.Helper()
	cs, err := SharedConnectionString()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return cs
}

// SharedConnectionString is ConnectionString for code without a testing.TB,
// such as Example functions: it returns AZURE_STORAGE_CONNECTION_STRING, or
// the test binary's Azurite, started on first use and stopped by Main.
func SharedConnectionString() (string, error) {
	if cs := os.Getenv(ConnectionStringEnv); cs != "" {
		return cs, nil
	}
	shared.once.Do(func() {
		front, err := FrontOptions()
		if err != nil {
			shared.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		srv, err := azurite.Start(ctx, &azurite.Options{Front: front})
		shared.mu.Lock()
		defer shared.mu.Unlock()
		if err != nil {
			shared.err = err
			return
		}
		shared.server = srv
		shared.connStr = srv.ConnectionString()
	})
	if shared.err != nil {
		return "", fmt.Errorf("cannot start Azurite: %w", shared.err)
	}
	return shared.connStr, nil
}

// FrontOptions returns the front the tests' Azurite runs behind, parsed
// from TABLEKIT_FRONT: nil when there is none, or when the tests run
// against the account in AZURE_STORAGE_CONNECTION_STRING.
func FrontOptions() (*azurite.FrontOptions, error) {
	if os.Getenv(ConnectionStringEnv) != "" {
		return nil, nil
	}
	o, err := azurite.ParseFrontSpec(os.Getenv(FrontEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FrontEnv, err)
	}
	return o, nil
}

// EnforcesSASRanges reports whether the test account refuses a table SAS's
// requests outside its PartitionKey/RowKey range, as Azure does: a real
// account does; Azurite does only behind a front that enforces them.
func EnforcesSASRanges() bool {
	if os.Getenv(ConnectionStringEnv) != "" {
		return true
	}
	o, err := FrontOptions()
	return err == nil && o != nil && !o.NoSASRanges
}

// PagesAsAzure reports whether the test account may answer a query in
// pages as Azure does, cut short or empty with a continuation token, so
// that it takes more requests than its results fill: a real account does;
// Azurite, which always answers full pages, does only behind a front with
// Paging (TABLEKIT_FRONT=strict). Tests that count a query's requests
// expect Azurite's exact counts only when it does not.
func PagesAsAzure() bool {
	if os.Getenv(ConnectionStringEnv) != "" {
		return true
	}
	o, err := FrontOptions()
	return err == nil && o != nil && o.Paging
}

// Service is the tablekit.Options.Service of the test account:
// tablekit.ServiceCosmosDB when the tests run behind the front in Cosmos
// DB mode (TABLEKIT_FRONT=cosmos), else tablekit.ServiceAuto.
func Service() tablekit.Service {
	if o, err := FrontOptions(); err == nil && o != nil && o.Cosmos {
		return tablekit.ServiceCosmosDB
	}
	return tablekit.ServiceAuto
}

// FrontBefore returns the options of a front a test puts before the test
// account's table endpoint (azurite.NewFront): a copy of opts, in Cosmos
// DB mode when the test account is Cosmos DB's (see [Service]), as a
// front that answers as Table storage before an endpoint that answers as
// Cosmos DB would answer as neither.
func FrontBefore(opts *azurite.FrontOptions) *azurite.FrontOptions {
	o := azurite.FrontOptions{}
	if opts != nil {
		o = *opts
	}
	if Service() == tablekit.ServiceCosmosDB {
		o.Cosmos = true
	}
	return &o
}

// Narrates checks that an example's narration out holds each of wants.
// In a want, "{n}" (a number in braces) stands for a count of requests
// that Azure's paging may raise (see [PagesAsAzure]): it matches n
// exactly, or, where the test account pages as Azure may, any number
// from n up (and the word after it in the plural: "{1} transaction"
// matches "3 transactions").
func Narrates(t testing.TB, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		var re strings.Builder
		var mins []int
		rest := want
		for {
			m := countPlaceholder.FindStringSubmatchIndex(rest)
			if m == nil {
				re.WriteString(regexp.QuoteMeta(rest))
				break
			}
			re.WriteString(regexp.QuoteMeta(rest[:m[0]]))
			re.WriteString(`(\d+)`)
			n, _ := strconv.Atoi(rest[m[2]:m[3]])
			mins = append(mins, n)
			rest = rest[m[1]:]
			if w := countNoun.FindString(rest); w != "" {
				re.WriteString(regexp.QuoteMeta(w) + "s?")
				rest = rest[len(w):]
			}
		}
		ok := false
		for _, got := range regexp.MustCompile(re.String()).FindAllStringSubmatch(out, -1) {
			ok = true
			for i, min := range mins {
				n, _ := strconv.Atoi(got[i+1])
				if n < min || (n != min && !PagesAsAzure()) {
					ok = false
				}
			}
			if ok {
				break
			}
		}
		if !ok {
			t.Errorf("narration lacks %q:\n%s", want, out)
		}
	}
}

// countPlaceholder is a count in a want of [Narrates]: "{3}"; countNoun
// the word after it.
var (
	countPlaceholder = regexp.MustCompile(`\{(\d+)\}`)
	countNoun        = regexp.MustCompile(`^ [A-Za-z]+`)
)

// ExampleAccount opens an Account on the shared test account for an
// Example function, or panics: an Example has no other way to fail.
func ExampleAccount() *tablekit.Account {
	cs, err := SharedConnectionString()
	if err != nil {
		panic(err)
	}
	acct, err := tablekit.Open(cs, &tablekit.Options{Service: Service()})
	if err != nil {
		panic(err)
	}
	return acct
}

// Account opens a new Account (with its own Meter) on the test account.
// opts may add policies, retry options or a transport; with Service
// ServiceAuto (or nil opts) the Account is opened with [Service].
func Account(t testing.TB, opts *tablekit.Options) *tablekit.Account {
	t.Helper()
	o := tablekit.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Service == tablekit.ServiceAuto {
		o.Service = Service()
	}
	acct, err := tablekit.Open(ConnectionString(t), &o)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return acct
}

// TableName returns a valid table name unique to this call: the test's
// name (letters and digits only) plus a random suffix.
func TableName(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("t")
	for _, r := range t.Name() {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	name := truncate(b.String(), 63-8) + suffix(8)
	if err := names.CheckTable(name); err != nil {
		t.Fatalf("testenv: made a bad table name: %v", err)
	}
	return name
}

// QueueName returns a valid queue name unique to this call: the test's
// name (lowercase, other characters as single hyphens) plus a random
// suffix.
func QueueName(t testing.TB) string {
	t.Helper()
	name := dnsName(t)
	if err := names.CheckQueue(name); err != nil {
		t.Fatalf("testenv: made a bad queue name: %v", err)
	}
	return name
}

// ContainerName returns a valid blob container name unique to this call,
// made like [QueueName].
func ContainerName(t testing.TB) string {
	t.Helper()
	name := dnsName(t)
	if err := names.CheckContainer(name); err != nil {
		t.Fatalf("testenv: made a bad container name: %v", err)
	}
	return name
}

// dnsName makes a queue or container name from the test's name.
func dnsName(t testing.TB) string {
	var b strings.Builder
	b.WriteString("t-")
	for _, r := range strings.ToLower(t.Name()) {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else if !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	base := strings.TrimRight(truncate(b.String(), 63-9), "-")
	return base + "-" + suffix(8)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// suffix returns n random lowercase letters and digits.
func suffix(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	buf := make([]byte, n)
	rand.Read(buf)
	for i, c := range buf {
		buf[i] = alphabet[int(c)%len(alphabet)]
	}
	return string(buf)
}

// CreateTable creates a table for t on acct, deletes it when t ends, and
// returns its name.
func CreateTable(t testing.TB, acct *tablekit.Account) string {
	t.Helper()
	name := TableName(t)
	client := acct.Tables().NewClient(name)
	create(t, "table "+name, func(ctx context.Context) error { _, err := client.CreateTable(ctx, nil); return err },
		func(ctx context.Context) error {
			_, err := client.Delete(ctx, nil)
			return wire.Wrap("DeleteTable", "", "", "", err)
		})
	return name
}

// NewTable creates a table for t on acct (see [CreateTable]) and returns
// the SDK's client of it, for tests that check what the SDK sees.
func NewTable(t testing.TB, acct *tablekit.Account) *aztables.Client {
	t.Helper()
	return acct.Tables().NewClient(CreateTable(t, acct))
}

// OpenTable creates a table for t on acct (see [CreateTable]) and returns
// a Table of T over it, opened with opts; it fails t if either fails.
func OpenTable[T any](t testing.TB, acct *tablekit.Account, opts *tablekit.TableOptions) *tablekit.Table[T] {
	t.Helper()
	tbl, err := tablekit.OpenTable[T](acct, CreateTable(t, acct), opts)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return tbl
}

// NewQueue creates a queue for t on acct and deletes it when t ends.
func NewQueue(t testing.TB, acct *tablekit.Account) *azqueue.QueueClient {
	t.Helper()
	name := QueueName(t)
	client := acct.Queues().NewQueueClient(name)
	create(t, "queue "+name, func(ctx context.Context) error { _, err := client.Create(ctx, nil); return err },
		func(ctx context.Context) error {
			_, err := client.Delete(ctx, nil)
			return wire.Wrap("DeleteQueue", "", "", "", err)
		})
	return client
}

// NewContainer creates a blob container for t on acct and deletes it when
// t ends.
func NewContainer(t testing.TB, acct *tablekit.Account) *container.Client {
	t.Helper()
	name := ContainerName(t)
	client := acct.Blobs().ServiceClient().NewContainerClient(name)
	create(t, "container "+name, func(ctx context.Context) error { _, err := client.Create(ctx, nil); return err },
		func(ctx context.Context) error {
			_, err := client.Delete(ctx, nil)
			return wire.Wrap("DeleteContainer", "", "", "", err)
		})
	return client
}

// create runs mk for t's resource (what names it in messages), failing t
// if it fails, and runs del when t ends; a resource already gone is fine.
func create(t testing.TB, what string, mk, del func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := mk(ctx); err != nil {
		t.Fatalf("testenv: create %s: %v", what, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := del(ctx); err != nil && !errors.Is(err, tablekit.ErrNotFound) {
			t.Errorf("testenv: delete %s: %v", what, err)
		}
	})
}
