package sections

import (
	"context"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/patterns"
)

// HighVolumeDelete shows the high-volume delete pattern: a table per
// period, so that retention deletes whole tables instead of entities.
func HighVolumeDelete() demo.Section {
	return demo.Section{
		Name:        "highvolumedelete",
		Description: "high-volume delete: a table per day, writes routed by time, retention that drops whole tables",
		Run:         runHighVolumeDelete,
	}
}

// hvdLogin is one login attempt, kept for a few days.
type hvdLogin struct {
	User string    `table:",pk"`
	ID   string    `table:",rk"`
	At   time.Time `table:"At"`
	OK   bool      `table:"OK"`
}

func runHighVolumeDelete(ctx context.Context, env *demo.Env) error {
	now := time.Now().UTC()
	prefix := env.TableName("Logins")
	p, err := patterns.NewPeriodTables[hvdLogin](env.Account, prefix, patterns.Daily(), nil)
	if err != nil {
		return err
	}
	env.Defer(func(ctx context.Context) error {
		_, err := p.DropBefore(ctx, now.AddDate(0, 0, 2))
		return err
	})
	meter := env.Account.Meter()
	env.Say("deleting old entities one by one costs a request per entity (or per 100 in a transaction); a table per day costs one request per day")

	const perDay = 300
	for d := 4; d >= 0; d-- {
		day := now.AddDate(0, 0, -d)
		tbl, err := p.Table(ctx, day)
		if err != nil {
			return err
		}
		items := make([]hvdLogin, perDay)
		for i := range items {
			at := p.Period().Start(day).Add(time.Duration(i) * time.Minute)
			items[i] = hvdLogin{User: fmt.Sprintf("user%02d", i%10), ID: at.Format("150405") + fmt.Sprintf("-%03d", i), At: at, OK: i%9 != 0}
		}
		if _, err := tbl.BulkWriter(nil).Insert(ctx, items); err != nil {
			return err
		}
		env.Say("wrote %d logins of %s into table %s", perDay, day.Format("2006-01-02"), tbl.Name())
	}
	if _, err := p.Insert(ctx, now, hvdLogin{User: "ada", ID: "now", At: now, OK: true}); err != nil {
		return err
	}
	env.Say("a login now is routed to today's table, %s", p.Name(now))

	before := meter.Snapshot()
	dropped, err := p.Retain(ctx, 3)
	if err != nil {
		return err
	}
	cost := meter.Snapshot().Sub(before)
	env.Say("Retain(3) keeps today and the two days before; it dropped %v: %v", dropped, cost)
	if len(dropped) != 2 || cost.Count("table", "DeleteTable") != 2 {
		return fmt.Errorf("dropped %v with %v", dropped, cost)
	}

	n, failed := 0, 0
	for l, err := range p.Query(ctx, time.Time{}, time.Time{}, tablekit.Filter{}, nil) {
		if err != nil {
			return err
		}
		n++
		if !l.OK {
			failed++
		}
	}
	env.Say("a query across the retained days reads %d logins (%d failed); the dropped days are gone", n, failed)
	if n != 3*perDay+1 {
		return fmt.Errorf("query saw %d logins, want %d", n, 3*perDay+1)
	}
	env.Say("table names are never reused: Azure keeps a deleted table's name unavailable for a while (TableBeingDeleted)")
	return nil
}
