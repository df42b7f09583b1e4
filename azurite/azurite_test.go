package azurite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/azurite"
)

// ctxFor returns the context of t's requests: cancelled when t ends. It
// has no deadline of its own (a fixed one failed a test whose subtests
// share it on a loaded machine): a request that hangs ends with the test
// binary's -timeout, which says where.
func ctxFor(t testing.TB) context.Context {
	return t.Context()
}

// exerciseTables creates a table, inserts an entity and reads it back.
func exerciseTables(t *testing.T, ctx context.Context, connStr, table string) {
	t.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(ctx, table, nil); err != nil {
		t.Fatalf("create table: %v", err)
	}
	client := svc.NewClient(table)
	entity, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r", "Value": "hello"})
	if _, err := client.AddEntity(ctx, entity, nil); err != nil {
		t.Fatalf("insert entity: %v", err)
	}
	got, err := client.GetEntity(ctx, "p", "r", nil)
	if err != nil {
		t.Fatalf("get entity: %v", err)
	}
	var props map[string]any
	if err := json.Unmarshal(got.Value, &props); err != nil {
		t.Fatal(err)
	}
	if props["Value"] != "hello" {
		t.Fatalf("entity Value = %v, want hello", props["Value"])
	}
}

func TestEndpointsWork(t *testing.T) {
	t.Parallel()
	srv := azurite.StartForTest(t, nil)
	ctx := ctxFor(t)
	connStr := srv.ConnectionString()

	t.Run("table", func(t *testing.T) {
		exerciseTables(t, ctx, connStr, "endpointtest")
	})

	t.Run("queue", func(t *testing.T) {
		svc, err := azqueue.NewServiceClientFromConnectionString(connStr, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := svc.NewQueueClient("endpoint-test")
		if _, err := q.Create(ctx, nil); err != nil {
			t.Fatalf("create queue: %v", err)
		}
		if _, err := q.EnqueueMessage(ctx, "hello queue", nil); err != nil {
			t.Fatalf("put message: %v", err)
		}
		resp, err := q.DequeueMessage(ctx, nil)
		if err != nil {
			t.Fatalf("get message: %v", err)
		}
		if len(resp.Messages) != 1 || *resp.Messages[0].MessageText != "hello queue" {
			t.Fatalf("got messages %+v, want one saying %q", resp.Messages, "hello queue")
		}
	})

	t.Run("blob", func(t *testing.T) {
		client, err := azblob.NewClientFromConnectionString(connStr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CreateContainer(ctx, "endpoint-test", nil); err != nil {
			t.Fatalf("create container: %v", err)
		}
		data := bytes.Repeat([]byte("blob data "), 1000)
		if _, err := client.UploadBuffer(ctx, "endpoint-test", "dir/a.txt", data, nil); err != nil {
			t.Fatalf("upload: %v", err)
		}
		got := make([]byte, len(data)+10)
		n, err := client.DownloadBuffer(ctx, "endpoint-test", "dir/a.txt", got, nil)
		if err != nil {
			t.Fatalf("download: %v", err)
		}
		if !bytes.Equal(got[:n], data) {
			t.Fatalf("downloaded %d bytes that differ from the %d uploaded", n, len(data))
		}
	})
}

func TestTwoServersAndStop(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	var servers [2]*azurite.Server
	var errs [2]error
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() { servers[i], errs[i] = azurite.Start(ctx, nil) })
	}
	wg.Wait()
	for i, s := range servers {
		if errs[i] != nil {
			t.Fatalf("server %d: %v", i, errs[i])
		}
		t.Cleanup(func() { s.Stop() })
	}

	ports := map[int]bool{}
	for _, s := range servers {
		b, q, tb := azurite.Ports(s)
		for _, p := range []int{b, q, tb} {
			if ports[p] {
				t.Fatalf("port %d used twice: %v and %v", p, ports, s.ConnectionString())
			}
			ports[p] = true
		}
	}

	// Both work, and they are separate: a table made on one is not on the other.
	exerciseTables(t, ctx, servers[0].ConnectionString(), "first")
	exerciseTables(t, ctx, servers[1].ConnectionString(), "second")
	svc, err := aztables.NewServiceClientFromConnectionString(servers[1].ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.NewClient("first").GetEntity(ctx, "p", "r", nil); err == nil {
		t.Fatal("server 1 has the table made on server 0")
	}

	for i, s := range servers {
		pid := azurite.Pid(s)
		if err := s.Stop(); err != nil {
			t.Fatalf("stop server %d: %v", i, err)
		}
		if !processGone(pid) {
			t.Errorf("server %d: process %d (or its group) still exists after Stop", i, pid)
		}
		if err := s.Stop(); err != nil {
			t.Errorf("second Stop of server %d: %v", i, err)
		}
		b, q, tb := azurite.Ports(s)
		for _, p := range []int{b, q, tb} {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				t.Errorf("server %d: port %d not free after Stop: %v", i, p, err)
				continue
			}
			l.Close()
		}
	}
}

func ExampleStart() {
	ctx := context.Background()
	srv, err := azurite.Start(ctx, nil) // installs Azurite with npm on first use
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()

	client, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = client.CreateTable(ctx, "Example", nil)
	fmt.Println("created:", err == nil)
	// Output: created: true
}

func TestEnvOrStart(t *testing.T) {
	ctx := context.Background()
	t.Setenv(azurite.ConnectionStringEnv, "UseDevelopmentStorage=true")
	cs, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil || cs != "UseDevelopmentStorage=true" || stop() != nil {
		t.Fatalf("with %s set: %q, %v", azurite.ConnectionStringEnv, cs, err)
	}
	t.Setenv(azurite.ConnectionStringEnv, "")
	cs, stop, err = azurite.EnvOrStart(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cs, "AccountName="+azurite.AccountName) || !strings.Contains(cs, "TableEndpoint=http://127.0.0.1:") {
		t.Errorf("started Azurite's connection string: %q", cs)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}
