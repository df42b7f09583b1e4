package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states what packages stream, feed and outbox promise, with
// their costs: a hire is the mark and 1 EGT, a stale append is refused
// with the current version (its mark deleted), a repeat returns the first
// result (its mark deleted), the view
// folds each hire once, and each outbox message is applied once.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []struct {
		line  string // with %d for the cost
		cost  int64
		query bool // the cost includes queries, which Azure's paging may answer in more requests
	}{
		{"a hire: its Hired event (an outbox message too) and the current row in 1 EGT, after the feed's mark (1 write): %d transactions", 2, false},
		{"a stale writer expecting version 1 is refused: current version 2 (ErrPreconditionFailed: true), %d transactions", 4, true},
		{"Lisa's move to Marketing sent again with its event id: replayed=true, version 2, %d transactions", 5, true},
		{"outbox: 4 messages handled (3 hires and a copy of Lisa's), 0 failed, %d badges inserted", 3, false},
	} {
		m := regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(want.line), "%d", `(\d+)`)).FindStringSubmatch(out.String())
		if m == nil {
			t.Errorf("narration lacks %q:\n%s", want.line, out.String())
			continue
		}
		if n, _ := strconv.ParseInt(m[1], 10, 64); n < want.cost || (n != want.cost && !(want.query && testenv.PagesAsAzure())) {
			t.Errorf("%q: %d, want %d", want.line, n, want.cost)
		}
	}
	// The view row of Jones lists both Joneses once each, in the order the
	// relay met their streams; Barr has a row of its own.
	jones := regexp.MustCompile(`by last name Jones: (.*)\n`).FindStringSubmatch(out.String())
	if jones == nil || (jones[1] != "Jon (000223), Lisa (000123)" && jones[1] != "Lisa (000123), Jon (000223)") {
		t.Errorf("view row of Jones: %q, want Jon (000223) and Lisa (000123) once each:\n%s", jones, out.String())
	}
}
