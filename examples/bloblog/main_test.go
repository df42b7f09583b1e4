package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results and costs the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"writer 1: 1500 records in 34 flushes (4 by size, 24 by age, the rest at period ends and at Close, which wrote the last 29 buffered records) into 6 blobs; 0 names were taken",
		"writer 2: 1500 records in 34 flushes",
		"6 names were taken by the other writer",
		"writing 3000 records cost 160 transactions",
		"metadata of web/2024/05/06/1500/000000.log: first 15:00:00.000, last 15:09:58.000, 300 records",
		"window 15:04-15:06: 120 records from both writers in time order (15:04:00.000 ... 15:05:58.001)",
		"one listing of hour 15, and a download of only the 2 blobs",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

// Every message written comes back once, unchanged (tabs and newlines
// included), in time order, and a window returns exactly its records.
func TestMessagesRoundTrip(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	name := containerOf(t, acct)
	sent, err := writeHour(ctx, acct, name, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := logtail.OpenReader(acct, name, "web")
	if err != nil {
		t.Fatal(err)
	}
	var got []logtail.Record
	for rec, err := range r.Read(ctx, start, start.Add(time.Hour)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec)
	}
	if !slices.IsSortedFunc(got, func(a, b logtail.Record) int { return a.Time.Compare(b.Time) }) {
		t.Error("the records are not in time order")
	}
	msgs := make([]string, len(got))
	for i, rec := range got {
		msgs[i] = rec.Message
	}
	slices.Sort(msgs)
	slices.Sort(sent)
	if !slices.Equal(msgs, sent) {
		t.Errorf("read back %d messages, want the %d written", len(msgs), len(sent))
	}
	if n := len(slices.DeleteFunc(msgs, func(m string) bool { return !strings.Contains(m, "\tuser-agent: \"multi\nline\"") })); n != 10 {
		t.Errorf("%d messages with a tab and a newline came back, want 10", n)
	}
	from, to := start.Add(4*time.Minute), start.Add(6*time.Minute)
	n := 0
	for rec, err := range r.Read(ctx, from, to) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Time.Before(from) || !rec.Time.Before(to) {
			t.Errorf("record at %v outside the window [%v, %v)", rec.Time, from, to)
		}
		n++
	}
	if n != 120 { // one record every 2 s per writer
		t.Errorf("the window 15:04-15:06 returned %d records, want 120", n)
	}
}

// Write-through: each record is committed before Write returns, at two
// transactions (Put Block, Put Block List) per record.
func TestWriteThrough(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	clock := &simClock{}
	clock.Set(start.Add(2 * time.Hour))
	audit, err := logtail.OpenWriter(acct, containerOf(t, acct), "audit", &logtail.WriterOptions{WriteThrough: true, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	for i := range 3 {
		if err := audit.Write(ctx, fmt.Sprint("admin action ", i)); err != nil {
			t.Fatal(err)
		}
		if s := audit.Stats(); s.Written != int64(i+1) || s.Buffered != 0 {
			t.Errorf("after Write %d: %+v, want it written, nothing buffered", i, s)
		}
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 6 {
		t.Errorf("3 write-through records cost %v, want 6 transactions", cost)
	}
	if err := audit.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// containerOf creates a container for t and returns its name.
func containerOf(t *testing.T, acct *tablekit.Account) string {
	t.Helper()
	c := testenv.NewContainer(t, acct)
	u := c.URL()
	return u[strings.LastIndexByte(strings.TrimRight(u, "/"), '/')+1:]
}
