package testenv_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/internal/wire"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestNames(t *testing.T) {
	long := strings.Repeat("VeryLongTestName", 10)
	for _, name := range []string{"plain", "With Spaces & 'quotes'", "ünïcödé/ÄÖÜ", "--", "9digits", long} {
		t.Run(name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 20 {
				for kind, n := range map[string]string{
					"table":     testenv.TableName(t),
					"queue":     testenv.QueueName(t),
					"container": testenv.ContainerName(t),
				} {
					var err error
					switch kind {
					case "table":
						err = names.CheckTable(n)
					case "queue":
						err = names.CheckQueue(n)
					default:
						err = names.CheckContainer(n)
					}
					if err != nil {
						t.Fatalf("%s name %q: %v", kind, n, err)
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

func TestResourcesAreRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acct := testenv.Account(t, nil)
	var tableName string
	var queueExists, containerExists func() bool

	t.Run("inner", func(t *testing.T) {
		table := testenv.NewTable(t, acct)
		queue := testenv.NewQueue(t, acct)
		container := testenv.NewContainer(t, acct)
		if _, err := table.GetAccessPolicy(ctx, nil); err != nil {
			t.Fatalf("table not created: %v", err)
		}
		queueExists = func() bool {
			_, err := queue.GetProperties(ctx, nil)
			return !errors.Is(wire.Wrap("GetProperties", "", "", "", err), tablekit.ErrNotFound)
		}
		containerExists = func() bool {
			_, err := container.GetProperties(ctx, nil)
			return !bloberror.HasCode(err, bloberror.ContainerNotFound)
		}
		if !queueExists() || !containerExists() {
			t.Fatal("queue or container not created")
		}
		// Find the table's name through the service, as a user would.
		pager := acct.Tables().NewListTablesPager(&aztables.ListTablesOptions{Filter: to.Ptr("TableName ge 'tTestResourcesAreRemovedinner'")})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, tb := range page.Tables {
				if strings.HasPrefix(*tb.Name, "tTestResourcesAreRemovedinner") {
					tableName = *tb.Name
				}
			}
		}
		if tableName == "" {
			t.Fatal("table not listed")
		}
	})

	_, err := acct.Tables().NewClient(tableName).GetAccessPolicy(ctx, nil)
	if !errors.Is(wire.Wrap("GetAccessPolicy", "", "", "", err), tablekit.ErrNotFound) {
		t.Errorf("table %s still there after its test: %v", tableName, err)
	}
	if queueExists() {
		t.Error("queue still there after its test")
	}
	if containerExists() {
		t.Error("container still there after its test")
	}
}

func TestFrontOptions(t *testing.T) {
	if os.Getenv(testenv.ConnectionStringEnv) != "" {
		t.Setenv(testenv.ConnectionStringEnv, "")
	}
	for _, tc := range []struct {
		spec      string
		front     bool
		enforces  bool
		wantError bool
	}{
		{spec: "", front: false, enforces: false},
		{spec: "off", front: false, enforces: false},
		{spec: "strict", front: true, enforces: true},
		{spec: "limits", front: true, enforces: false},
		{spec: "strict,cosmos", front: true, enforces: true},
		{spec: "nonsense", wantError: true},
	} {
		t.Setenv(testenv.FrontEnv, tc.spec)
		o, err := testenv.FrontOptions()
		if (err != nil) != tc.wantError {
			t.Fatalf("%q: error %v", tc.spec, err)
		}
		if tc.wantError {
			if !strings.Contains(err.Error(), testenv.FrontEnv) {
				t.Errorf("%q: the error does not name the variable: %v", tc.spec, err)
			}
			continue
		}
		if (o != nil) != tc.front || testenv.EnforcesSASRanges() != tc.enforces {
			t.Errorf("%q: options %+v, enforces SAS ranges %v", tc.spec, o, testenv.EnforcesSASRanges())
		}
	}
	// A real account enforces everything itself: no front before it.
	t.Setenv(testenv.FrontEnv, "strict")
	t.Setenv(testenv.ConnectionStringEnv, "UseDevelopmentStorage=true")
	if o, err := testenv.FrontOptions(); o != nil || err != nil || !testenv.EnforcesSASRanges() {
		t.Errorf("with a real account: %+v, %v, %v", o, err, testenv.EnforcesSASRanges())
	}
}

// TestServiceAndFrontBefore: the test account is Cosmos DB's behind the
// front in Cosmos mode, and a front put before it is in Cosmos mode too.
func TestServiceAndFrontBefore(t *testing.T) {
	if os.Getenv(testenv.ConnectionStringEnv) != "" {
		t.Setenv(testenv.ConnectionStringEnv, "")
	}
	for spec, cosmos := range map[string]bool{"": false, "strict": false, "cosmos": true, "strict,cosmos": true} {
		t.Setenv(testenv.FrontEnv, spec)
		if got := testenv.Service() == tablekit.ServiceCosmosDB; got != cosmos {
			t.Errorf("%q: Service() = %v", spec, testenv.Service())
		}
		if o := testenv.FrontBefore(&azurite.FrontOptions{Paging: true, Seed: 3}); o.Cosmos != cosmos || !o.Paging || o.Seed != 3 {
			t.Errorf("%q: FrontBefore = %+v", spec, o)
		}
	}
}

// TestNarrates: a count in braces matches itself, and more only where the
// account pages as Azure may; the word after it may be plural then.
func TestNarrates(t *testing.T) {
	if os.Getenv(testenv.ConnectionStringEnv) != "" {
		t.Setenv(testenv.ConnectionStringEnv, "")
	}
	const out = "read 3 entities in 2 pages (3 transactions); wrote 1 transaction\n"
	for _, c := range []struct {
		front, want string
		ok          bool
	}{
		{"", "read 3 entities in {2} pages ({3} transactions)", true},
		{"", "read 3 entities in {1} page", false}, // 2 is not 1 without paging
		{"strict", "read 3 entities in {1} page ({2} transaction)", true},
		{"strict", "read 3 entities in {3} pages", false}, // fewer than the least
		{"strict", "wrote {1} transaction", true},
		{"", "read 4 entities", false},
	} {
		t.Setenv(testenv.FrontEnv, c.front)
		rec := &recorder{}
		testenv.Narrates(rec, out, c.want)
		if rec.failed == c.ok {
			t.Errorf("front %q: Narrates(%q) failed %v, want ok %v", c.front, c.want, rec.failed, c.ok)
		}
	}
}

// recorder is a testing.TB that records whether it was failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
