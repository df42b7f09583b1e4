package azurite_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/azurite"
)

// frontEnv is one Azurite with a strict front, shared by the front's
// subtests; each subtest makes its own tables and, when it needs other
// options, its own front before the same Azurite.
type frontEnv struct {
	srv *azurite.Server
}

// TestFront runs every behaviour of the front against one real Azurite.
func TestFront(t *testing.T) {
	t.Parallel()
	env := &frontEnv{srv: azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{}})}
	t.Run("options", env.testOptions)
	t.Run("passthrough", env.testPassthrough)
	t.Run("limits", env.testLimits)
	t.Run("batch", env.testBatch)
	t.Run("sas", env.testSAS)
	t.Run("throttle", env.testThrottle)
	t.Run("latency", env.testLatency)
	t.Run("cosmos", env.testCosmos)
	t.Run("paging", env.testPaging)
	t.Run("off", env.testOff)
}

// newFront starts another front before the shared Azurite.
func (env *frontEnv) newFront(t *testing.T, opts *azurite.FrontOptions) *azurite.Front {
	t.Helper()
	f, err := azurite.NewFront(ctxFor(t), env.srv.Direct(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// tableClients creates a table through connStr (retries off, so that
// every answer is seen) and returns its client.
func tableClient(t testing.TB, connStr, name string) *aztables.Client {
	t.Helper()
	svc := serviceClient(t, connStr)
	if _, err := svc.CreateTable(ctxFor(t), name, nil); err != nil {
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.ErrorCode != "TableAlreadyExists" {
			t.Fatalf("create table %s: %v", name, err)
		}
	}
	return svc.NewClient(name)
}

func serviceClient(t testing.TB, connStr string) *aztables.ServiceClient {
	t.Helper()
	opts := &aztables.ClientOptions{}
	opts.Retry.MaxRetries = -1
	svc, err := aztables.NewServiceClientFromConnectionString(connStr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// entity returns an entity's JSON with the given extra properties.
func entity(pk, rk string, props map[string]any) []byte {
	m := map[string]any{"PartitionKey": pk, "RowKey": rk}
	for k, v := range props {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// wantError checks that err is a service error with this status and code.
func wantError(t *testing.T, what string, err error, status int, code string) *azcore.ResponseError {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("%s: want %d %s, got %v", what, status, code, err)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("%s: want %d %s, got %d %q: %v", what, status, code, re.StatusCode, re.ErrorCode, err)
	}
	// Table errors carry their code in the body only, queue and blob
	// errors in the x-ms-error-code header too, as the live services do.
	header := re.RawResponse.Header.Get("x-ms-error-code")
	if json := strings.Contains(re.RawResponse.Header.Get("Content-Type"), "json"); json && header != "" || !json && header != code {
		t.Fatalf("%s: x-ms-error-code %q with Content-Type %q", what, header, re.RawResponse.Header.Get("Content-Type"))
	}
	return re
}

// wantBatchError checks that err is a failed transaction (202) whose
// changeset answers status with code and a message starting with prefix.
func wantBatchError(t *testing.T, what string, err error, status int, code, prefix string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted {
		t.Fatalf("%s: want a failed transaction (202), got %v", what, err)
	}
	body, perr := runtime.Payload(re.RawResponse)
	if perr != nil {
		t.Fatal(perr)
	}
	i := bytes.Index(body, []byte("HTTP/1.1 "))
	if i < 0 {
		t.Fatalf("%s: no inner response in %s", what, body)
	}
	if got := string(body[i+9 : i+12]); got != strconv.Itoa(status) {
		t.Fatalf("%s: inner status %s, want %d: %s", what, got, status, body)
	}
	j := bytes.Index(body, []byte(`{"odata.error"`))
	if j < 0 {
		t.Fatalf("%s: no odata.error in %s", what, body)
	}
	var e struct {
		Error struct {
			Code    string
			Message struct{ Value string }
		} `json:"odata.error"`
	}
	if err := json.NewDecoder(bytes.NewReader(body[j:])).Decode(&e); err != nil {
		t.Fatalf("%s: %v in %s", what, err, body)
	}
	if e.Error.Code != code || !strings.HasPrefix(e.Error.Message.Value, prefix) {
		t.Fatalf("%s: inner error %s %q, want %s %q...", what, e.Error.Code, e.Error.Message.Value, code, prefix)
	}
}

// count returns the number of entities a filter finds.
func count(t *testing.T, c *aztables.Client, filter string) int {
	t.Helper()
	n := 0
	opts := &aztables.ListEntitiesOptions{}
	if filter != "" {
		opts.Filter = &filter
	}
	pager := c.NewListEntitiesPager(opts)
	for pager.More() {
		p, err := pager.NextPage(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		n += len(p.Entities)
	}
	return n
}

func (env *frontEnv) testOptions(t *testing.T) {
	srv := env.srv
	if srv.Front() == nil {
		t.Fatal("Server.Front() is nil with Options.Front set")
	}
	direct, ends := srv.Direct(), srv.Endpoints()
	if ends != srv.Front().Endpoints() {
		t.Fatalf("Server.Endpoints() = %+v, want the front's %+v", ends, srv.Front().Endpoints())
	}
	for _, pair := range [][2]string{{direct.Blob, ends.Blob}, {direct.Queue, ends.Queue}, {direct.Table, ends.Table}} {
		if pair[0] == pair[1] {
			t.Fatalf("front endpoint %s is Azurite's own", pair[1])
		}
		du, _ := url.Parse(pair[0])
		fu, _ := url.Parse(pair[1])
		if du.Path != fu.Path {
			t.Fatalf("front path %q differs from Azurite's %q", fu.Path, du.Path)
		}
	}
	cs := srv.ConnectionString()
	if !strings.Contains(cs, "TableEndpoint="+ends.Table+";") || strings.Contains(cs, direct.Table) {
		t.Fatalf("ConnectionString %q does not point at the front", cs)
	}
	if srv.Endpoints().Table != ends.Table {
		t.Fatalf("TableEndpoint() = %s, want the front's %s", srv.Endpoints().Table, ends.Table)
	}
	if _, _, tbl := azurite.Ports(srv); strings.Contains(ends.Table, ":"+strconv.Itoa(tbl)+"/") {
		t.Fatalf("front table endpoint %s uses Azurite's port %d", ends.Table, tbl)
	}

	// A front before only the table service serves only it, and Close
	// frees its port.
	f, err := azurite.NewFront(ctxFor(t), azurite.Endpoints{Table: direct.Table}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := f.Endpoints(); e.Blob != "" || e.Queue != "" || e.Table == "" {
		t.Fatalf("front before the table service only: %+v", e)
	}
	if cs := f.ConnectionString(); strings.Contains(cs, "BlobEndpoint") || !strings.Contains(cs, "TableEndpoint="+f.Endpoints().Table) {
		t.Fatalf("connection string %q", cs)
	}
	exerciseTables(t, ctxFor(t), f.ConnectionString(), "tableonly")
	u, _ := url.Parse(f.Endpoints().Table)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("port %s not free after Close: %v", u.Host, err)
	}
	l.Close()

	for _, bad := range []azurite.Endpoints{{Table: "not a url"}, {Queue: "ftp://x/y"}} {
		if _, err := azurite.NewFront(ctxFor(t), bad, nil); err == nil {
			t.Errorf("NewFront(%+v) accepted a bad target", bad)
		}
	}
	if _, err := azurite.NewFront(ctxFor(t), direct, &azurite.FrontOptions{Latency: -time.Second}); err == nil {
		t.Error("NewFront accepted a negative latency")
	}
	if _, err := azurite.NewFront(ctxFor(t), direct, &azurite.FrontOptions{Throttle: &azurite.ThrottleOptions{Burst: -1}}); err == nil {
		t.Error("NewFront accepted a negative burst")
	}
}

// The strict front passes ordinary table, queue and blob traffic through.
func (env *frontEnv) testPassthrough(t *testing.T) {
	ctx := ctxFor(t)
	cs := env.srv.ConnectionString()
	exerciseTables(t, ctx, cs, "passthrough")

	qsvc, err := azqueue.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := qsvc.NewQueueClient("front-passthrough")
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatalf("create queue: %v", err)
	}
	if _, err := q.EnqueueMessage(ctx, "through the front", nil); err != nil {
		t.Fatal(err)
	}
	got, err := q.DequeueMessage(ctx, nil)
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].MessageText != "through the front" {
		t.Fatalf("dequeue: %+v %v", got, err)
	}

	bc, err := azblob.NewClientFromConnectionString(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bc.CreateContainer(ctx, "front-passthrough", nil); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 100_000) // 1 MB: bodies stream through
	if _, err := bc.UploadBuffer(ctx, "front-passthrough", "b", data, nil); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data))
	if n, err := bc.DownloadBuffer(ctx, "front-passthrough", "b", buf, nil); err != nil || !bytes.Equal(buf[:n], data) {
		t.Fatalf("download: %d bytes, %v", n, err)
	}

	// Entities of every EDM type and near every limit pass unchanged.
	c := tableClient(t, cs, "passtypes")
	props := map[string]any{
		"S": strings.Repeat("s", 32<<10), "S@odata.type": "Edm.String",
		"B": make([]byte, 64<<10), "B@odata.type": "Edm.Binary",
		"I": 7, "L": "9007199254740993", "L@odata.type": "Edm.Int64",
		"D": 1.5, "T": true, "G": "c9da6455-213d-42c9-9a79-3e9149a57833", "G@odata.type": "Edm.Guid",
		"W": "2024-05-06T07:08:09.1234567Z", "W@odata.type": "Edm.DateTime",
		"Ünïcode_ok": "x",
	}
	if _, err := c.AddEntity(ctx, entity("p", strings.Repeat("k", 512), props), nil); err != nil {
		t.Fatalf("entity at the limits: %v", err)
	}
	if stats := env.srv.Front().Stats(); stats.Requests == 0 || stats.Forwarded == 0 {
		t.Fatalf("stats after traffic: %+v", stats)
	}
}

// testOff: with every check off the front is a plain proxy, and Azurite's
// leniency shows.
func (env *frontEnv) testOff(t *testing.T) {
	ctx := ctxFor(t)
	f := env.newFront(t, &azurite.FrontOptions{NoLimits: true, NoSASRanges: true})
	c := tableClient(t, f.ConnectionString(), "offfront")
	props := map[string]any{}
	for i := range 253 {
		props[fmt.Sprintf("P%03d", i)] = i
	}
	if _, err := c.AddEntity(ctx, entity("p", "r", props), nil); err != nil {
		t.Fatalf("253 properties through a front with limits off (Azurite accepts them): %v", err)
	}
	if s := f.Stats(); s.LimitRejected != 0 || s.Forwarded == 0 {
		t.Fatalf("stats: %+v", s)
	}
}
