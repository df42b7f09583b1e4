package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// Login is one entity of a daily table.
type Login struct {
	User string    `table:",pk"`
	ID   string    `table:",rk"`
	At   time.Time `table:"At"`
}

func TestPeriodTablesRetention(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	today := time.Date(2025, 3, 14, 10, 30, 0, 0, time.UTC)
	// A prefix unique to this run, short enough for the date stamp.
	prefix := "hvd" + strings.ToLower(testenv.TableName(t)[len(testenv.TableName(t))-8:])
	p, err := patterns.NewPeriodTables[Login](acct, prefix, patterns.Daily(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := p.DropBefore(context.Background(), today.AddDate(1, 0, 0)); err != nil {
			t.Error(err)
		}
	})
	if got := p.Name(today); got != prefix+"20250314" {
		t.Fatalf("Name = %q", got)
	}

	// Five daily tables of 2,000 entities each, written in bulk.
	for d := range 5 {
		day := today.AddDate(0, 0, -d)
		tbl, err := p.Table(ctx, day)
		if err != nil {
			t.Fatal(err)
		}
		items := make([]Login, 2000)
		for i := range items {
			items[i] = Login{User: fmt.Sprintf("user%02d", i%20), ID: fmt.Sprintf("%s-%04d", day.Format("0102"), i), At: day.Add(time.Duration(i) * time.Second)}
		}
		if res, err := tbl.BulkWriter(nil).Insert(ctx, items); err != nil || res.Succeeded != 2000 {
			t.Fatalf("day %d: %+v, %v", d, res.Succeeded, err)
		}
	}
	// Routing: a write at a time goes to that day's table.
	yesterday, err := p.Table(ctx, today.AddDate(0, 0, -1))
	if err != nil || yesterday.Name() != prefix+"20250313" {
		t.Fatal(yesterday, err)
	}
	if _, err := yesterday.Upsert(ctx, Login{User: "late", ID: "x", At: today.AddDate(0, 0, -1)}); err != nil {
		t.Fatal(err)
	}
	tables, err := p.List(ctx)
	if err != nil || len(tables) != 5 {
		t.Fatalf("List: %v, %v", tables, err)
	}
	if tables[0].Name != prefix+"20250310" || !tables[4].Start.Equal(time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("tables %v", tables)
	}

	// Keep three days: exactly two tables go, in two requests.
	before := acct.Meter().Snapshot()
	dropped, err := p.DropBefore(ctx, today.AddDate(0, 0, -2))
	if err != nil {
		t.Fatal(err)
	}
	cost := acct.Meter().Snapshot().Sub(before)
	if len(dropped) != 2 || dropped[0] != prefix+"20250310" || dropped[1] != prefix+"20250311" {
		t.Fatalf("dropped %v", dropped)
	}
	if cost.Count("table", "DeleteTable") != 2 || cost.Total() != 3 {
		t.Fatalf("retention cost %v; want one listing and two deletes", cost)
	}

	// Queries across the retained days see only retained data.
	count := map[string]int{}
	n := 0
	for l, err := range p.Query(ctx, time.Time{}, time.Time{}, tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		count[l.At.Format("0102")]++
		n++
	}
	if n != 6001 || count["0312"] != 2000 || count["0313"] != 2001 || count["0314"] != 2000 {
		t.Fatalf("query saw %d entities: %v", n, count)
	}
	// A window covering only yesterday reads one table.
	n = 0
	for l, err := range p.Query(ctx, today.AddDate(0, 0, -1), today.Truncate(24*time.Hour), tablekit.Where("PartitionKey eq ?", "user07"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if l.At.Day() != 13 || l.User != "user07" {
			t.Fatalf("window query returned %+v", l)
		}
		n++
	}
	if n != 100 {
		t.Fatalf("window query: %d entities, want 100", n)
	}
	// A limit counts across tables.
	n = 0
	for _, err := range p.Query(ctx, time.Time{}, time.Time{}, tablekit.Filter{}, &tablekit.QueryOptions{Limit: 2500}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2500 {
		t.Fatalf("limited query: %d", n)
	}
}

func TestPeriods(t *testing.T) {
	at := time.Date(2025, 12, 31, 23, 59, 0, 0, time.FixedZone("x", 3600))
	six, err := patterns.Every(6 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p     patterns.Period
		stamp string
		next  string
	}{
		{patterns.Hourly(), "2025123122", "2025123123"},
		{patterns.Daily(), "20251231", "20260101"},
		{patterns.Monthly(), "202512", "202601"},
		{six, "202512311800", "202601010000"},
	} {
		start := c.p.Start(at)
		if got := c.p.Stamp(start); got != c.stamp {
			t.Errorf("stamp %q, want %q", got, c.stamp)
		}
		if got := c.p.Stamp(c.p.Add(start, 1)); got != c.next {
			t.Errorf("next %q, want %q", got, c.next)
		}
		back, err := c.p.Parse(c.stamp)
		if err != nil || !back.Equal(start) {
			t.Errorf("Parse(%q) = %v, %v", c.stamp, back, err)
		}
	}
	if _, err := patterns.Every(90 * time.Second); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Every(90s): %v", err)
	}
	if _, err := patterns.NewPeriodTables[Login](nil, "x", patterns.Daily(), nil); err == nil {
		t.Error("nil account accepted")
	}
}
