package tablekit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// scanRow is the entity type of the table scan policy tests.
type scanRow struct {
	Dept     string `table:",pk"`
	ID       string `table:",rk"`
	LastName string
}

// scanTable makes a table with the given policy and logger, holding three
// rows in two partitions.
func scanTable(t *testing.T, policy tablekit.TableScanPolicy, logger *slog.Logger) (*tablekit.Account, *tablekit.Table[scanRow]) {
	t.Helper()
	acct := testenv.Account(t, &tablekit.Options{Logger: logger})
	tbl, err := tablekit.OpenTable[scanRow](acct, testenv.CreateTable(t, acct), &tablekit.TableOptions{TableScans: policy})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, r := range []scanRow{{"Sales", "1", "Jones"}, {"Sales", "2", "Smith"}, {"HR", "3", "Jones"}} {
		if _, err := tbl.Insert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return acct, tbl
}

// collect runs a Query and returns the RowKeys it read.
func collect(t *testing.T, tbl *tablekit.Table[scanRow], f tablekit.Filter, opts *tablekit.QueryOptions) ([]string, error) {
	t.Helper()
	var ids []string
	for r, err := range tbl.Query(context.Background(), f, opts) {
		if err != nil {
			return ids, err
		}
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// logRecords decodes the JSON log lines in buf.
func logRecords(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestTableScanRefusedSendsNothing(t *testing.T) {
	ctx := context.Background()
	acct, tbl := scanTable(t, tablekit.RefuseTableScans, nil)
	scans := []tablekit.Filter{
		tablekit.Where("LastName eq ?", "Jones"),                               // the guide's table scan
		tablekit.Where("RowKey eq ?", "1"),                                     // RowKey without PartitionKey
		tablekit.Or(tablekit.PartitionEq("Sales"), tablekit.PartitionEq("HR")), // or over PartitionKeys
		{}, // no filter
		tablekit.Where("Timestamp ge datetime'2000-01-01T00:00:00Z'"),
		tablekit.Where("PartitionKey EQ 'Sales'"), // not OData: cannot be classified, so refused too
	}
	check := func(op string, f tablekit.Filter, err error) {
		t.Helper()
		var ve *tablekit.ValidationError
		if !errors.Is(err, tablekit.ErrTableScan) || !errors.Is(err, tablekit.ErrInvalidInput) || !errors.As(err, &ve) {
			t.Errorf("%s(%q): err %v, want a *ValidationError matching ErrTableScan", op, f, err)
			return
		}
		if ve.Op != op || ve.Entity != tbl.Name() || !strings.Contains(ve.Detail, f.Explain().String()) {
			t.Errorf("%s(%q): error %+v does not name the operation, table and plan", op, f, ve)
		}
	}
	for _, f := range scans {
		before := acct.Meter().Snapshot()
		_, err := collect(t, tbl, f, nil)
		check("Query", f, err)
		_, err = tbl.QueryPage(ctx, f, &tablekit.QueryOptions{PageSize: 10})
		check("QueryPage", f, err)
		_, err = tbl.Top(ctx, f, 1, nil)
		if onCosmos() {
			// Top is refused on Cosmos DB whatever its filter.
			if !isCosmosRefusal(err) {
				t.Errorf("Top(%q) on Cosmos DB: %v, want ErrUnsupported naming Cosmos DB", f, err)
			}
		} else {
			check("Query", f, err)
		}
		if sent := acct.Meter().Snapshot().Sub(before); sent.Total() != 0 {
			t.Errorf("refused %q still sent requests: %v", f, sent)
		}
	}

	// What is not a table scan runs, and so does a scan the caller allows.
	for _, c := range []struct {
		f    tablekit.Filter
		opts *tablekit.QueryOptions
		want []string
	}{
		{tablekit.PointQuery("Sales", "2"), nil, []string{"2"}},
		{tablekit.Where("PartitionKey eq ? and LastName eq ?", "Sales", "Jones"), nil, []string{"1"}},
		{tablekit.PartitionRange("A", "I"), nil, []string{"3"}},
		{tablekit.Where("LastName eq ?", "Jones"), &tablekit.QueryOptions{AllowTableScan: true}, []string{"1", "3"}},
	} {
		before := acct.Meter().Snapshot()
		got, err := collect(t, tbl, c.f, c.opts)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Query(%q) = %q, %v; want %q", c.f, got, err, c.want)
		}
		if n := acct.Meter().Snapshot().Sub(before).Count("table", "QueryEntities"); n < 1 {
			t.Errorf("Query(%q) sent %d QueryEntities", c.f, n)
		}
	}
}

func TestTableScanLogged(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	acct, tbl := scanTable(t, tablekit.LogTableScans, logger) // the zero value: the default

	before := acct.Meter().Snapshot()
	f := tablekit.Where("LastName eq ?", "Jones")
	got, err := collect(t, tbl, f, nil)
	if err != nil || !slices.Equal(got, []string{"1", "3"}) {
		t.Fatalf("logged table scan: %q, %v", got, err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Count("table", "QueryEntities"); n < 1 {
		t.Errorf("logged table scan sent %d QueryEntities", n)
	}
	page, err := tbl.QueryPage(ctx, tablekit.Where("RowKey eq ?", "3"), nil)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("logged QueryPage: %v, %v", page, err)
	}
	// Neither a partition scan nor an allowed scan is logged.
	if _, err := collect(t, tbl, tablekit.PartitionEq("Sales"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, tbl, f, &tablekit.QueryOptions{AllowTableScan: true}); err != nil {
		t.Fatal(err)
	}

	recs := logRecords(t, &buf)
	if len(recs) != 2 {
		t.Fatalf("%d log records, want 2:\n%s", len(recs), buf.String())
	}
	want := []map[string]any{
		{"level": "WARN", "msg": "tablekit: table scan", "table": tbl.Name(), "op": "Query", "filter": "LastName eq 'Jones'",
			"class": "table scan", "reason": "filters only on properties, which have no index"},
		{"level": "WARN", "msg": "tablekit: table scan", "table": tbl.Name(), "op": "QueryPage", "filter": "RowKey eq '3'",
			"class": "table scan", "reason": "RowKey without PartitionKey: every partition is searched"},
	}
	for i, w := range want {
		for k, v := range w {
			if recs[i][k] != v {
				t.Errorf("record %d: %s = %v, want %v", i, k, recs[i][k], v)
			}
		}
	}
}

func TestTableScanAllowed(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	_, tbl := scanTable(t, tablekit.AllowTableScans, logger)
	got, err := collect(t, tbl, tablekit.Filter{}, nil)
	if err != nil || !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("allowed table scan: %q, %v", got, err)
	}
	if buf.Len() != 0 {
		t.Errorf("an allowed table scan was logged: %s", buf.String())
	}
}

func TestTableScanPolicyValidated(t *testing.T) {
	acct := testenv.Account(t, nil)
	_, err := tablekit.OpenTable[scanRow](acct, "nosuchtable", &tablekit.TableOptions{TableScans: tablekit.TableScanPolicy(9)})
	if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "TableScanPolicy(9)") {
		t.Errorf("unknown policy: %v", err)
	}
}

func TestTableScanLoggedToDefaultLogger(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	defer slog.SetDefault(old)
	_, tbl := scanTable(t, tablekit.LogTableScans, nil) // nil Logger: slog.Default() when logging
	if _, err := collect(t, tbl, tablekit.Where("LastName eq ?", "Smith"), nil); err != nil {
		t.Fatal(err)
	}
	recs := logRecords(t, &buf)
	if len(recs) != 1 || recs[0]["filter"] != "LastName eq 'Smith'" || recs[0]["class"] != "table scan" {
		t.Errorf("default logger got %v", recs)
	}
}
