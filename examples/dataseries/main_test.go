package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	testenv.Narrates(t, out.String(),
		"4 writers added 1 to hour 9, 25 times each: ",
		"the whole day in one point query: H09=100, H17=42, 24 values (1 transaction (GetEntity=1))",
		"Modify moved 10 messages from hour 9 to hour 10 in one conditional merge: H09=90, H10=10 (2 transactions (GetEntity=1 MergeEntity=1))",
		"the application's Table[Day] reads the days of emp000223 as structs: 2025-03-14: 142 (H09=90 H10=10 H17=42), 2025-03-15: 7 (H09=7 H10=0 H17=0); 149 messages in all ({1} transaction (QueryEntities={1}))",
	)
}

// TestSeriesTooLong: a series of every minute of a day (1,440 slots) does
// not fit one entity (252 properties) and is refused before anything is
// sent, pointing to patterns.Wide.
func TestSeriesTooLong(t *testing.T) {
	acct := testenv.Account(t, nil)
	tbl, err := tablekit.OpenTable[Day](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = patterns.NewSeries(tbl.AsEntities(), &patterns.SeriesOptions{Prefix: "M", Slots: 1440})
	if !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(err.Error(), "patterns.Wide") {
		t.Fatalf("a 1,440-slot series: want ErrTooLarge, got %v", err)
	}
	if n := acct.Meter().Snapshot().Total(); n != 0 {
		t.Fatalf("the refusal sent %d requests", n)
	}
}
