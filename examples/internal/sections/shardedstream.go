package sections

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/patterns"
)

// ShardedStream shows the cure for the prepend/append anti-pattern: a
// time-ordered stream spread over shard partitions, read back in time
// order by merging parallel per-shard range queries.
func ShardedStream() demo.Section {
	return demo.Section{
		Name:        "shardedstream",
		Description: "prepend/append anti-pattern: a stream spread over 8 shard partitions, time windows merged across shards",
		Run:         runShardedStream,
	}
}

func runShardedStream(ctx context.Context, env *demo.Env) error {
	tbl, err := patEntityTable(ctx, env, "ShardedStream")
	if err != nil {
		return err
	}
	meter := env.Account.Meter()
	s, err := patterns.NewStream[tablekit.Entity](tbl, "clicks", &patterns.StreamOptions{Shards: 8})
	if err != nil {
		return err
	}
	env.Say("keys that grow with time (PartitionKey = date, RowKey = time) put every new entity at the end of one partition: a hot spot that caps the write rate")
	env.Say("instead, PartitionKey = the shard bucket of the event ID (FNV-1a mod 8), then the stream's name (keys.ShardedKey: the bucket first), RowKey = time + ID")

	base := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	const total = 2000
	events := make([]patterns.Event[tablekit.Entity], total)
	for i := range events {
		events[i] = patterns.Event[tablekit.Entity]{
			Time:  base.Add(time.Duration(i) * 1500 * time.Millisecond),
			ID:    fmt.Sprintf("click-%05d", i),
			Value: tablekit.Entity{Properties: map[string]any{"Page": fmt.Sprintf("/products/%d", i%13)}},
		}
	}
	before := meter.Snapshot()
	if _, err := s.Append(ctx, events...); err != nil {
		return err
	}
	env.Say("appended %d events: %v", total, meter.Snapshot().Sub(before))
	var counts []string
	for _, pk := range s.Partitions() {
		n := 0
		for _, err := range tbl.Query(ctx, tablekit.PartitionEq(pk), &tablekit.QueryOptions{Select: []string{"Page"}}) {
			if err != nil {
				return err
			}
			n++
		}
		counts = append(counts, fmt.Sprintf("%s=%d", pk, n))
	}
	env.Say("events per partition: %s", strings.Join(counts, " "))

	from, until := base.Add(10*time.Minute), base.Add(11*time.Minute)
	before = meter.Snapshot()
	var first, last patterns.Event[tablekit.Entity]
	n := 0
	prev := time.Time{}
	for ev, err := range s.Query(ctx, from, until, nil) {
		if err != nil {
			return err
		}
		if ev.Time.Before(prev) {
			return fmt.Errorf("event %s out of order", ev.ID)
		}
		prev = ev.Time
		if n == 0 {
			first = ev
		}
		last = ev
		n++
	}
	env.Say("the window 09:10-09:11 runs one range query per shard in parallel and merges them: %d events, %s (%s) .. %s (%s), %v",
		n, first.ID, first.Time.Format("15:04:05.0"), last.ID, last.Time.Format("15:04:05.0"), meter.Snapshot().Sub(before))
	if n != 40 {
		return fmt.Errorf("the window holds %d events, want 40", n)
	}
	return nil
}
