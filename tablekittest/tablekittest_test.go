package tablekittest_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/tablekittest"
)

func TestMain(m *testing.M) { tablekittest.Main(m) }

// TestNames: the names are valid for their service whatever the test's
// name, and never made twice.
func TestNames(t *testing.T) {
	long := strings.Repeat("VeryLongTestName", 10)
	for _, name := range []string{"plain", "With Spaces & 'quotes'", "ünïcödé/ÄÖÜ", "--", "9digits", long} {
		t.Run(name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 20 {
				for kind, n := range map[string]string{
					"table":     tablekittest.TableName(t),
					"queue":     tablekittest.QueueName(t),
					"container": tablekittest.ContainerName(t),
				} {
					var problem string
					switch kind {
					case "table":
						problem, _ = names.Table(n)
					case "queue":
						problem, _ = names.Queue(n)
					default:
						problem, _ = names.Container(n)
					}
					if problem != "" {
						t.Fatalf("%s name %q: %s", kind, n, problem)
					}
					if seen[n] {
						t.Fatalf("%s name %q made twice", kind, n)
					}
					seen[n] = true
				}
			}
		})
	}
}

// TestResourcesAreRemoved: what a test made exists while it runs and is
// gone when it ends.
func TestResourcesAreRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acct := tablekittest.Account(t, nil)
	var table *tablekit.Table[tablekit.Entity]
	var queueExists, containerExists func() bool
	t.Run("inner", func(t *testing.T) {
		table = tablekittest.OpenTable[tablekit.Entity](t, acct, nil)
		queue := tablekittest.NewQueue(t, acct)
		container := tablekittest.NewContainer(t, acct)
		if !strings.HasPrefix(table.Name(), "tTestResourcesAreRemovedinner") {
			t.Errorf("table name %q does not start with the test's", table.Name())
		}
		if _, err := table.Insert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r"}); err != nil {
			t.Fatalf("table not created: %v", err)
		}
		queueExists = func() bool {
			_, err := queue.GetProperties(ctx, nil)
			var re *azcore.ResponseError
			return !(errors.As(err, &re) && re.StatusCode == http.StatusNotFound)
		}
		containerExists = func() bool {
			_, err := container.GetProperties(ctx, nil)
			return !bloberror.HasCode(err, bloberror.ContainerNotFound)
		}
		if !queueExists() || !containerExists() {
			t.Fatal("queue or container not created")
		}
	})
	if _, err := table.Get(ctx, "p", "r"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("table %s still there after its test: %v", table.Name(), err)
	}
	if err := table.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	if err := table.DeleteTable(ctx); err != nil {
		t.Errorf("table %s: created again, then %v", table.Name(), err)
	}
	if queueExists() {
		t.Error("queue still there after its test")
	}
	if containerExists() {
		t.Error("container still there after its test")
	}
}

// TestAccountMeters: each Account counts its own requests.
func TestAccountMeters(t *testing.T) {
	a, b := tablekittest.Account(t, nil), tablekittest.Account(t, nil)
	tbl := tablekittest.OpenTable[tablekit.Entity](t, a, nil)
	before := a.Meter().Snapshot().Total()
	if _, err := tbl.Upsert(context.Background(), tablekit.Entity{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatal(err)
	}
	if got := a.Meter().Snapshot().Total() - before; got != 1 {
		t.Errorf("the Account's Meter counted %d requests for one upsert", got)
	}
	if got := b.Meter().Snapshot().Total(); got != 0 {
		t.Errorf("another Account's Meter counted %d requests", got)
	}
}

func TestFrontOptions(t *testing.T) {
	if os.Getenv(azurite.ConnectionStringEnv) != "" {
		t.Setenv(azurite.ConnectionStringEnv, "")
	}
	for _, tc := range []struct {
		spec      string
		front     bool
		cosmos    bool
		wantError bool
	}{
		{spec: "", front: false},
		{spec: "off", front: false},
		{spec: "strict", front: true},
		{spec: "strict,cosmos", front: true, cosmos: true},
		{spec: "nonsense", wantError: true},
	} {
		t.Setenv(tablekittest.FrontEnv, tc.spec)
		o, err := tablekittest.FrontOptions()
		if (err != nil) != tc.wantError {
			t.Fatalf("%q: error %v", tc.spec, err)
		}
		if tc.wantError {
			if !strings.Contains(err.Error(), tablekittest.FrontEnv) {
				t.Errorf("%q: the error does not name the variable: %v", tc.spec, err)
			}
			continue
		}
		if (o != nil) != tc.front || (o != nil && o.Cosmos != tc.cosmos) {
			t.Errorf("%q: options %+v", tc.spec, o)
		}
	}
	// A real account enforces everything itself: no front before it.
	t.Setenv(tablekittest.FrontEnv, "strict")
	t.Setenv(azurite.ConnectionStringEnv, "UseDevelopmentStorage=true")
	if o, err := tablekittest.FrontOptions(); o != nil || err != nil {
		t.Errorf("with a real account: %+v, %v", o, err)
	}
	if cs := tablekittest.ConnectionString(t); cs != "UseDevelopmentStorage=true" {
		t.Errorf("with a real account: ConnectionString = %q", cs)
	}
}

// TestExample runs the package example's test, so that what it shows
// works.
func TestExample(t *testing.T) { testOrders(t) }
