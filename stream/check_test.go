package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// TestCheckRefusesBeforeSending: every append the service would refuse
// for its input (an entity over 1 MiB, a transaction over 4 MiB or 2 MB
// on Cosmos DB, an event id or a stream ID that makes an invalid key, a
// RowKey over Cosmos DB's 255 bytes) is refused by Store.Check, with the
// error Append gives (a *tablekit.ValidationError naming the limit), and
// so by feed.Feed.Append before its dirty mark: nothing is sent, at an
// explicit version or at AnyVersion.
func TestCheckRefusesBeforeSending(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 30_000) // 60,000 bytes of UTF-16
	props := func(n int) map[string]any {
		p := map[string]any{}
		for i := range n {
			p[fmt.Sprintf("P%d", i)] = big
		}
		return p
	}
	events := func(n, propsEach int) []stream.Event {
		evs := make([]stream.Event, n)
		for i := range evs {
			evs[i] = stream.Event{ID: fmt.Sprintf("e%d", i), Data: tablekit.Entity{Properties: props(propsEach)}}
		}
		return evs
	}
	withID := func(eid string) []stream.Event { return []stream.Event{{ID: eid, Data: Placed{Item: "pen"}}} }
	good := stream.ID{PartitionKey: "p", Prefix: "s"}
	for _, cosmos := range []bool{false, true} {
		if !cosmos && testenv.Service() == tablekit.ServiceCosmosDB {
			// An Account finds Cosmos DB from the front's answers; Table
			// storage's limits are checked by the runs without it.
			t.Log("the test front answers as Cosmos DB: Table storage's limits not checked in this run")
			continue
		}
		svc := tablekit.ServiceAuto
		if cosmos {
			svc = tablekit.ServiceCosmosDB
		}
		acct, err := tablekit.Open(testenv.ConnectionString(t), &tablekit.Options{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := newStore(t, acct, nil)
		f, err := feed.New(s, testenv.OpenTable[tablekit.Entity](t, acct, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		type refusal struct {
			name     string
			id       stream.ID
			events   []stream.Event
			extra    []tablekit.Action[tablekit.Entity]
			sentinel error
			limit    string
		}
		cases := []refusal{
			{"entity over 1 MiB", good, events(1, 18), nil, tablekit.ErrTooLarge, "<= 1 MiB per entity"},
			{"extra action over 1 MiB", good, withID("x"), []tablekit.Action[tablekit.Entity]{tablekit.UpsertAction(tablekit.Entity{PartitionKey: "p", RowKey: "view", Properties: props(18)})}, tablekit.ErrTooLarge, "<= 1 MiB per entity"},
			{"id with /", good, withID("a/b"), nil, tablekit.ErrInvalidKey, "no / \\ # ?"},
			{"id with \\", good, withID(`a\b`), nil, tablekit.ErrInvalidKey, "no / \\ # ?"},
			{"id with #", good, withID("a#b"), nil, tablekit.ErrInvalidKey, "no / \\ # ?"},
			{"id with ?", good, withID("a?b"), nil, tablekit.ErrInvalidKey, "no / \\ # ?"},
			{"id with a control character", good, withID("a\x01b"), nil, tablekit.ErrInvalidKey, "no / \\ # ?"},
			{"id over 1 KiB", good, withID(strings.Repeat("i", 1020)), nil, tablekit.ErrInvalidKey, "<= 1 KiB"},
			{"prefix with /", stream.ID{PartitionKey: "p", Prefix: "a/b"}, withID("x"), nil, tablekit.ErrInvalidKey, "no / \\ # ?"},
			{"partition key with #", stream.ID{PartitionKey: "p#q"}, withID("x"), nil, tablekit.ErrInvalidKey, "no / \\ # ?"},
		}
		if cosmos {
			cases = append(cases,
				refusal{"transaction over 2 MB", good, events(40, 2), nil, tablekit.ErrTooLarge, "<= 2 MB per transaction on Azure Cosmos DB for Table"},
				refusal{"id row's RowKey over 255 bytes", good, withID(strings.Repeat("i", 251)), nil, tablekit.ErrInvalidKey, "<= 255 bytes"},
				refusal{"prefix over 255 bytes", stream.ID{PartitionKey: "p", Prefix: strings.Repeat("s", 245)}, withID("x"), nil, tablekit.ErrInvalidKey, "<= 255 bytes"})
		} else {
			cases = append(cases, refusal{"transaction over 4 MiB", good, events(49, 3), nil, tablekit.ErrTooLarge, "<= 4 MiB per transaction"})
		}
		for _, c := range cases {
			for _, expected := range []int64{0, 7, stream.AnyVersion} {
				what := fmt.Sprintf("cosmos %v, %s, expecting %d", cosmos, c.name, expected)
				before := acct.Meter().Snapshot()
				checked := s.Check(c.id, expected, c.events, c.extra...)
				var ve *tablekit.ValidationError
				if !errors.Is(checked, c.sentinel) || !errors.As(checked, &ve) || !strings.Contains(ve.Limit, c.limit) {
					t.Errorf("%s: Check: %v, want %v naming %q", what, checked, c.sentinel, c.limit)
				}
				// Check returns the error Append would (which names Append).
				_, appended := s.Append(ctx, c.id, expected, c.events, c.extra...)
				if appended == nil || checked == nil || appended.Error() != checked.Error() || !strings.HasPrefix(appended.Error(), "stream: Store.Append: ") {
					t.Errorf("%s: Append: %v, want the error of Check: %v", what, appended, checked)
				}
				_, fed := f.Append(ctx, c.id, expected, c.events, c.extra...)
				if !errors.Is(fed, c.sentinel) || !strings.Contains(fed.Error(), c.limit) {
					t.Errorf("%s: feed.Feed.Append: %v, want %v naming %q", what, fed, c.sentinel, c.limit)
				}
				if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 0 {
					t.Errorf("%s: refused with %v sent", what, cost)
				}
			}
		}
		// At the limits, Check says yes: the largest entity (1 MiB less
		// the keys and the stream's properties), 255-byte RowKeys on
		// Cosmos DB.
		fits := []stream.Event{{ID: "ok", Data: tablekit.Entity{Properties: props(17)}}}
		if err := s.Check(good, 0, fits); err != nil {
			t.Errorf("cosmos %v: Check of an entity under 1 MiB: %v", cosmos, err)
		}
		if _, err := f.Append(ctx, good, 0, fits); err != nil {
			t.Errorf("cosmos %v: feed.Feed.Append of an entity under 1 MiB: %v", cosmos, err)
		}
		long := withID(strings.Repeat("i", 255-len("s~id~")))
		if err := s.Check(good, 1, long); err != nil {
			t.Errorf("cosmos %v: Check of a 255-byte id row: %v", cosmos, err)
		}
	}
}
