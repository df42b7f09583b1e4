package sections

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/logtail"
)

// LogTail shows the log tail pattern: RowKeys that sort newest first, so
// the latest entries of a partition are one short range query away, and
// shard buckets for a log too busy for one partition.
func LogTail() demo.Section {
	return demo.Section{
		Name:        "logtail",
		Description: "log tail: newest-first RowKeys (inverted ticks), latest N, time windows, paging, shard buckets",
		Run:         runLogTail,
	}
}

// ltReading is one log tail entry: the Log sets the embedded Entry's keys.
type ltReading struct {
	logtail.Entry
	Celsius float64 `table:"Celsius"`
	Note    string  `table:"Note,omitempty"`
}

func runLogTail(ctx context.Context, env *demo.Env) error {
	name := env.TableName("LogTail")
	tbl, err := tablekit.OpenTable[ltReading](env.Account, name, nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	env.Defer(func(ctx context.Context) error { return tbl.DeleteTable(ctx) })

	log, err := logtail.New(tbl, nil)
	if err != nil {
		return err
	}
	env.Say("table %s holds readings of sensors; PartitionKey = sensor, RowKey = inverted ticks, so the newest sorts first", name)
	env.Say("the RowKey is the guide's .NET formula {0:D19} of DateTime.MaxValue.Ticks - t.Ticks, plus '_' and a sequence number for entries of the same tick")

	const sensor = "sensor-7"
	base := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	var last ltReading
	for i := range 60 {
		at := base.Add(time.Duration(i) * time.Minute)
		if i >= 57 {
			at = base.Add(57 * time.Minute) // three readings in one tick
		}
		if last, err = log.AppendAt(ctx, sensor, at, ltReading{Celsius: 20 + float64(i%7)/2, Note: fmt.Sprint("reading ", i)}); err != nil {
			return err
		}
	}
	env.Say("appended 60 readings, one a minute from 15:00, the last three in the same tick; the newest RowKey is %s", last.RowKey)

	before := env.Account.Meter().Snapshot()
	latest, err := log.Latest(ctx, sensor, 5)
	if err != nil {
		return err
	}
	cost := env.Account.Meter().Snapshot().Sub(before)
	env.Say("Latest(5) = %s (QueryEntities: %d)", ltNotes(latest), cost.Count("table", "QueryEntities"))

	short, err := logtail.New(tbl, &logtail.Options{PageSize: 2})
	if err != nil {
		return err
	}
	before = env.Account.Meter().Snapshot()
	latest, err = short.Latest(ctx, sensor, 5)
	if err != nil {
		return err
	}
	cost = env.Account.Meter().Snapshot().Sub(before)
	env.Say("with pages of 2 (the service may always return short pages) Latest(5) still returns %d, in %d queries", len(latest), cost.Count("table", "QueryEntities"))

	var window []ltReading
	for r, err := range log.Window(ctx, sensor, base.Add(10*time.Minute), base.Add(14*time.Minute)) {
		if err != nil {
			return err
		}
		window = append(window, r)
	}
	env.Say("Window(15:10, 15:14) is one RowKey range query, newest first: %s", ltNotes(window))

	// A row written by a .NET program with the guide's formula.
	netAt := base.Add(56*time.Minute + 30*time.Second)
	const maxTicks, epochTicks = 3155378975999999999, 621355968000000000
	netKey := fmt.Sprintf("%019d", maxTicks-(netAt.Unix()*10_000_000+epochTicks))
	raw, err := tablekit.NewTable[tablekit.Entity](tbl.Client(), nil)
	if err != nil {
		return err
	}
	if _, err := raw.Insert(ctx, tablekit.Entity{PartitionKey: sensor, RowKey: netKey, Properties: map[string]any{"Celsius": 19.0, "Note": "written by .NET"}}); err != nil {
		return err
	}
	latest, err = log.Latest(ctx, sensor, 5)
	if err != nil {
		return err
	}
	env.Say("a .NET writer's row at 15:56:30 (RowKey %s, no suffix) sorts among ours by time: Latest(5) = %s", netKey, ltNotes(latest))

	pages, total := 0, 0
	tok := ""
	for {
		p, err := log.Page(ctx, sensor, &logtail.PageOptions{Size: 25, Continuation: tok})
		if err != nil {
			return err
		}
		pages++
		total += len(p.Items)
		if tok = p.Continuation; tok == "" {
			break
		}
	}
	env.Say("paging back 25 at a time with continuation tokens: %d entries in %d pages", total, pages)

	// The hot partition: shard a busy log.
	sharded, err := logtail.New(tbl, &logtail.Options{Shards: 4})
	if err != nil {
		return err
	}
	parts := map[string]int{}
	for i := range 40 {
		r, err := sharded.AppendAt(ctx, "busy-sensor", base.Add(time.Duration(i)*time.Second), ltReading{Celsius: 30, Note: fmt.Sprint("busy ", i)})
		if err != nil {
			return err
		}
		parts[r.PartitionKey]++
	}
	env.Say("one partition takes every insert of a log (the prepend anti-pattern); with Shards: 4 the 40 entries of busy-sensor went to %v", parts)
	before = env.Account.Meter().Snapshot()
	latest, err = sharded.Latest(ctx, "busy-sensor", 3)
	if err != nil {
		return err
	}
	cost = env.Account.Meter().Snapshot().Sub(before)
	env.Say("reads fan out and merge newest first: Latest(3) = %s, %d queries (one per bucket)", ltNotes(latest), cost.Count("table", "QueryEntities"))
	return nil
}

func ltNotes(rs []ltReading) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.Note)
	}
	return "[" + b.String() + "]"
}
