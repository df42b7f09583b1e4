// Package tablekittest gives your tests a real storage account, as
// net/http/httptest gives them a real server: the account in
// AZURE_STORAGE_CONNECTION_STRING when that is set, else an Azurite that
// all the tests of one test binary share, started on first use (see
// package azurite: it installs Azurite with npm on a machine's first use).
//
// Call [Main] from your package's TestMain, so that the shared Azurite is
// stopped when the tests end:
//
//	func TestMain(m *testing.M) { tablekittest.Main(m) }
//
// Each test then opens an [Account] and makes its own tables, queues and
// containers under names unique to the test ([OpenTable], [NewQueue],
// [NewContainer]), which are deleted when the test ends, so that tests
// run in parallel and against a shared account without meeting each
// other's data.
//
// With TABLEKIT_FRONT set ([FrontEnv]), the shared Azurite runs behind
// package azurite's front, so the same tests meet Azure's limits and
// paging, or Cosmos DB for Table's order and answers:
//
//	TABLEKIT_FRONT=strict go test ./...
//	TABLEKIT_FRONT=strict,cosmos go test ./...
package tablekittest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
)

// FrontEnv names the environment variable that puts package azurite's
// front before the shared Azurite. Its value is a front spec
// ([azurite.ParseFrontSpec]): "strict" turns on Azure's entity and batch
// limits, SAS PartitionKey/RowKey ranges and Azure's paging (short and
// empty pages, seeded), and neither throttles, delays nor reorders, so
// that tests stay deterministic; add "cosmos", "throttle=0.05" or
// "latency=20ms" for more. Unset, empty or "off": no front. It is ignored
// when AZURE_STORAGE_CONNECTION_STRING is set: a real account enforces
// Azure's rules itself.
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

// Main runs the tests of m, then calls cleanups (for example stopping what
// your package's Example functions started), stops the shared Azurite if
// one was started, and exits with the tests' exit code (1 if a cleanup or
// the stop failed). Call it from TestMain.
func Main(m *testing.M, cleanups ...func() error) {
	code := m.Run()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "tablekittest:", err)
		if code == 0 {
			code = 1
		}
	}
	for _, c := range cleanups {
		if err := c(); err != nil {
			fail(err)
		}
	}
	shared.mu.Lock()
	srv := shared.server
	shared.server = nil
	shared.mu.Unlock()
	if srv != nil {
		if f := srv.Front(); f != nil {
			s := f.Stats()
			fmt.Fprintf(os.Stderr, "tablekittest: %s=%s: %d requests, %d refused for Azure's limits, %d outside a SAS range, %d throttled\n",
				FrontEnv, os.Getenv(FrontEnv), s.Requests, s.LimitRejected, s.SASRejected, s.Throttled)
		}
		if err := srv.Stop(); err != nil {
			fail(err)
		}
	}
	os.Exit(code)
}

// ConnectionString returns AZURE_STORAGE_CONNECTION_STRING if it is set,
// else the connection string of the test binary's shared Azurite, started
// (behind the front [FrontEnv] asks for) on the first call. It fails tb if
// Azurite cannot start.
func ConnectionString(tb testing.TB) string {
	tb.Helper()
	if cs := os.Getenv(azurite.ConnectionStringEnv); cs != "" {
		return cs
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
		tb.Fatalf("tablekittest: cannot start Azurite: %v", shared.err)
	}
	return shared.connStr
}

// FrontOptions returns the front the shared Azurite runs behind, parsed
// from [FrontEnv]: nil when there is none, or when the tests run against
// the account in AZURE_STORAGE_CONNECTION_STRING. A spec that does not
// parse is an error that names the variable.
func FrontOptions() (*azurite.FrontOptions, error) {
	if os.Getenv(azurite.ConnectionStringEnv) != "" {
		return nil, nil
	}
	o, err := azurite.ParseFrontSpec(os.Getenv(FrontEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FrontEnv, err)
	}
	return o, nil
}

// Account opens a new Account (with its own Meter) on the test account
// ([ConnectionString]); it fails tb if it cannot. opts may add policies,
// retry options or a transport; with Service left ServiceAuto (or nil
// opts), an Account behind the front in Cosmos DB mode (TABLEKIT_FRONT
// with "cosmos") is opened as tablekit.ServiceCosmosDB, as the front
// answers.
func Account(tb testing.TB, opts *tablekit.Options) *tablekit.Account {
	tb.Helper()
	o := tablekit.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Service == tablekit.ServiceAuto {
		if f, err := FrontOptions(); err == nil && f != nil && f.Cosmos {
			o.Service = tablekit.ServiceCosmosDB
		}
	}
	acct, err := tablekit.Open(ConnectionString(tb), &o)
	if err != nil {
		tb.Fatalf("tablekittest: %v", err)
	}
	return acct
}

// OpenTable creates a table for tb on acct, under a name unique to this
// call ([TableName]), deletes it when tb ends, and returns a Table of T
// over it opened with opts. It fails tb if either fails.
func OpenTable[T any](tb testing.TB, acct *tablekit.Account, opts *tablekit.TableOptions) *tablekit.Table[T] {
	tb.Helper()
	name := TableName(tb)
	tbl, err := tablekit.OpenTable[T](acct, name, opts)
	if err != nil {
		tb.Fatalf("tablekittest: %v", err)
	}
	client := acct.Tables().NewClient(name)
	create(tb, "table "+name,
		func(ctx context.Context) error { _, err := client.CreateTable(ctx, nil); return err },
		func(ctx context.Context) error { _, err := client.Delete(ctx, nil); return err })
	return tbl
}

// NewQueue creates a queue for tb on acct, under a name unique to this
// call ([QueueName]), and deletes it when tb ends.
func NewQueue(tb testing.TB, acct *tablekit.Account) *azqueue.QueueClient {
	tb.Helper()
	name := QueueName(tb)
	client := acct.Queues().NewQueueClient(name)
	create(tb, "queue "+name,
		func(ctx context.Context) error { _, err := client.Create(ctx, nil); return err },
		func(ctx context.Context) error { _, err := client.Delete(ctx, nil); return err })
	return client
}

// NewContainer creates a blob container for tb on acct, under a name
// unique to this call ([ContainerName]), and deletes it when tb ends.
func NewContainer(tb testing.TB, acct *tablekit.Account) *container.Client {
	tb.Helper()
	name := ContainerName(tb)
	client := acct.Blobs().ServiceClient().NewContainerClient(name)
	create(tb, "container "+name,
		func(ctx context.Context) error { _, err := client.Create(ctx, nil); return err },
		func(ctx context.Context) error { _, err := client.Delete(ctx, nil); return err })
	return client
}

// create runs mk for tb's resource (what names it in messages), failing
// tb if it fails, and runs del when tb ends; a resource already gone is
// fine.
func create(tb testing.TB, what string, mk, del func(ctx context.Context) error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := mk(ctx); err != nil {
		tb.Fatalf("tablekittest: create %s: %v", what, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		var re *azcore.ResponseError
		if err := del(ctx); err != nil && !(errors.As(err, &re) && re.StatusCode == http.StatusNotFound) {
			tb.Errorf("tablekittest: delete %s: %v", what, err)
		}
	})
}

// TableName returns a table name unique to this call: "t", the test's
// name (its ASCII letters and digits) and a random suffix, 63 characters
// at most, as the table service's rules allow.
func TableName(tb testing.TB) string {
	var b strings.Builder
	b.WriteString("t")
	for _, r := range tb.Name() {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return truncate(b.String(), 63-8) + suffix(8)
}

// QueueName returns a queue name unique to this call: "t-", the test's
// name in lowercase (other characters as single hyphens) and a random
// suffix, 63 characters at most, as the queue service's rules allow.
func QueueName(tb testing.TB) string { return dnsName(tb) }

// ContainerName returns a blob container name unique to this call, made
// as [QueueName] makes one (the blob service's rules are the same).
func ContainerName(tb testing.TB) string { return dnsName(tb) }

// dnsName makes a queue or container name from the test's name.
func dnsName(tb testing.TB) string {
	var b strings.Builder
	b.WriteString("t-")
	for _, r := range strings.ToLower(tb.Name()) {
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
