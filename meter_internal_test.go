package tablekit

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		service, method, url string
		header               map[string]string
		want                 string
	}{
		// table service, Azure-style host
		{ServiceTable, "POST", "https://a.table.core.windows.net/Tables", nil, "CreateTable"},
		{ServiceTable, "GET", "https://a.table.core.windows.net/Tables?$filter=TableName%20eq%20'x'", nil, "QueryTables"},
		{ServiceTable, "DELETE", "https://a.table.core.windows.net/Tables('orders')", nil, "DeleteTable"},
		{ServiceTable, "POST", "https://a.table.core.windows.net/orders", nil, "InsertEntity"},
		{ServiceTable, "GET", "https://a.table.core.windows.net/orders()?$filter=PartitionKey%20eq%20'p'", nil, "QueryEntities"},
		{ServiceTable, "GET", "https://a.table.core.windows.net/orders(PartitionKey='p',RowKey='r')", nil, "GetEntity"},
		{ServiceTable, "GET", "https://a.table.core.windows.net/orders(PartitionKey='a%2Fb',RowKey='(x)')", nil, "GetEntity"},
		{ServiceTable, "PUT", "https://a.table.core.windows.net/orders(PartitionKey='p',RowKey='r')", nil, "UpdateEntity"},
		{ServiceTable, "PATCH", "https://a.table.core.windows.net/orders(PartitionKey='p',RowKey='r')", nil, "MergeEntity"},
		{ServiceTable, "MERGE", "https://a.table.core.windows.net/orders(PartitionKey='p',RowKey='r')", nil, "MergeEntity"},
		{ServiceTable, "POST", "https://a.table.core.windows.net/orders(PartitionKey='p',RowKey='r')", map[string]string{"X-HTTP-Method": "MERGE"}, "MergeEntity"},
		{ServiceTable, "DELETE", "https://a.table.core.windows.net/orders(PartitionKey='p',RowKey='r')", nil, "DeleteEntity"},
		{ServiceTable, "POST", "https://a.table.core.windows.net/$batch", nil, "Transaction"},
		{ServiceTable, "GET", "https://a.table.core.windows.net/orders?comp=acl", nil, "Other"},
		{ServiceTable, "GET", "https://a.table.core.windows.net/?restype=service&comp=properties", nil, "Other"},
		// table service, Azurite path-style: the account is the first segment
		{ServiceTable, "POST", "http://127.0.0.1:10002/devstoreaccount1/Tables", nil, "CreateTable"},
		{ServiceTable, "POST", "http://127.0.0.1:10002/devstoreaccount1/$batch", nil, "Transaction"},
		{ServiceTable, "GET", "http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='p',RowKey='r')", nil, "GetEntity"},
		{ServiceTable, "GET", "http://localhost:10002/devstoreaccount1/orders()", nil, "QueryEntities"},

		// queue service
		{ServiceQueue, "PUT", "https://a.queue.core.windows.net/jobs", nil, "CreateQueue"},
		{ServiceQueue, "DELETE", "https://a.queue.core.windows.net/jobs", nil, "DeleteQueue"},
		{ServiceQueue, "GET", "https://a.queue.core.windows.net/jobs?comp=metadata", nil, "GetProperties"},
		{ServiceQueue, "PUT", "https://a.queue.core.windows.net/jobs?comp=metadata", nil, "SetMetadata"},
		{ServiceQueue, "POST", "https://a.queue.core.windows.net/jobs/messages", nil, "PutMessage"},
		{ServiceQueue, "GET", "https://a.queue.core.windows.net/jobs/messages?numofmessages=32", nil, "GetMessages"},
		{ServiceQueue, "GET", "https://a.queue.core.windows.net/jobs/messages?peekonly=true", nil, "PeekMessages"},
		{ServiceQueue, "DELETE", "https://a.queue.core.windows.net/jobs/messages", nil, "ClearMessages"},
		{ServiceQueue, "PUT", "https://a.queue.core.windows.net/jobs/messages/1234?popreceipt=x", nil, "UpdateMessage"},
		{ServiceQueue, "DELETE", "https://a.queue.core.windows.net/jobs/messages/1234?popreceipt=x", nil, "DeleteMessage"},
		{ServiceQueue, "GET", "https://a.queue.core.windows.net/?comp=list", nil, "ListQueues"},
		{ServiceQueue, "POST", "http://127.0.0.1:10001/devstoreaccount1/jobs/messages", nil, "PutMessage"},
		{ServiceQueue, "GET", "http://127.0.0.1:10001/devstoreaccount1?comp=list", nil, "ListQueues"},

		// blob service
		{ServiceBlob, "PUT", "https://a.blob.core.windows.net/logs?restype=container", nil, "CreateContainer"},
		{ServiceBlob, "DELETE", "https://a.blob.core.windows.net/logs?restype=container", nil, "DeleteContainer"},
		{ServiceBlob, "GET", "https://a.blob.core.windows.net/logs?restype=container&comp=list", nil, "ListBlobs"},
		{ServiceBlob, "PUT", "https://a.blob.core.windows.net/logs/2024/01/a.log", map[string]string{"x-ms-blob-type": "BlockBlob"}, "PutBlob"},
		{ServiceBlob, "PUT", "https://a.blob.core.windows.net/logs/a.log?comp=block&blockid=AAAA", nil, "PutBlock"},
		{ServiceBlob, "PUT", "https://a.blob.core.windows.net/logs/a.log?comp=blocklist", nil, "PutBlockList"},
		{ServiceBlob, "GET", "https://a.blob.core.windows.net/logs/a.log?comp=blocklist", nil, "GetBlockList"},
		{ServiceBlob, "PUT", "https://a.blob.core.windows.net/logs/a.log?comp=appendblock", nil, "AppendBlock"},
		{ServiceBlob, "GET", "https://a.blob.core.windows.net/logs/a.log", nil, "GetBlob"},
		{ServiceBlob, "HEAD", "https://a.blob.core.windows.net/logs/a.log", nil, "GetProperties"},
		{ServiceBlob, "PUT", "https://a.blob.core.windows.net/logs/a.log?comp=metadata", nil, "SetMetadata"},
		{ServiceBlob, "DELETE", "https://a.blob.core.windows.net/logs/a.log", nil, "DeleteBlob"},
		{ServiceBlob, "PUT", "https://a.blob.core.windows.net/logs/b.log", map[string]string{"x-ms-copy-source": "https://x/y"}, "CopyBlob"},
		{ServiceBlob, "GET", "https://a.blob.core.windows.net/?comp=list", nil, "ListContainers"},
		{ServiceBlob, "PUT", "http://127.0.0.1:10000/devstoreaccount1/logs?restype=container", nil, "CreateContainer"},
		{ServiceBlob, "PUT", "http://127.0.0.1:10000/devstoreaccount1/logs/dir/a.log", nil, "PutBlob"},
		{ServiceBlob, "OPTIONS", "https://a.blob.core.windows.net/logs/a.log", nil, "Other"},
	}
	m := NewMeter()
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		for k, v := range c.header {
			h.Set(k, v)
		}
		p := m.Policy(c.service).(*meterPolicy)
		got := classify(c.service, c.method, p.resourcePath(u), u.Query(), h)
		if got != c.want {
			t.Errorf("%s %s %s = %s, want %s", c.service, c.method, c.url, got, c.want)
		}
	}
}

func TestEndpointPolicyStripsBasePath(t *testing.T) {
	m := NewMeter()
	// An endpoint with a path prefix that is not an IP-style host.
	p := m.endpointPolicy(ServiceQueue, "https://proxy.example.com/storage/acct").(*meterPolicy)
	u, _ := url.Parse("https://proxy.example.com/storage/acct/jobs/messages")
	if got := classify(ServiceQueue, "POST", p.resourcePath(u), u.Query(), http.Header{}); got != "PutMessage" {
		t.Fatalf("got %s, want PutMessage", got)
	}
}

func TestMeterSnapshot(t *testing.T) {
	var m Meter // the zero Meter works
	before := m.Snapshot()
	if before.Total() != 0 || before.String() != "0 requests" {
		t.Fatalf("empty snapshot: %d, %q", before.Total(), before.String())
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				m.add(ServiceTable, "InsertEntity")
				m.add(ServiceQueue, "PutMessage")
			}
		})
	}
	m.add(ServiceBlob, "PutBlob")
	wg.Wait()
	mid := m.Snapshot()
	if got := mid.Count(ServiceTable, "InsertEntity"); got != 8000 {
		t.Fatalf("InsertEntity = %d, want 8000", got)
	}
	if mid.Service(ServiceQueue) != 8000 || mid.Total() != 16001 {
		t.Fatalf("queue %d total %d, want 8000 and 16001", mid.Service(ServiceQueue), mid.Total())
	}
	m.add(ServiceTable, "GetEntity")
	m.add(ServiceTable, "InsertEntity")
	d := m.Snapshot().Sub(mid)
	if d.Total() != 2 || d.Count(ServiceTable, "GetEntity") != 1 || d.Count(ServiceQueue, "PutMessage") != 0 {
		t.Fatalf("Sub = %v", d)
	}
	if got, want := d.String(), "2 requests (table: GetEntity=1 InsertEntity=1)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	s := mid.String()
	if !strings.HasPrefix(s, "16001 requests (table: InsertEntity=8000; queue: PutMessage=8000; blob: PutBlob=1)") {
		t.Fatalf("String() = %q", s)
	}
	var zero MeterSnapshot
	if zero.Count(ServiceTable, "GetEntity") != 0 || zero.Sub(zero).Total() != 0 {
		t.Fatal("zero snapshot is not empty")
	}
}
