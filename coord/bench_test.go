package coord_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// BenchmarkWriterTransaction measures a one-action transaction (an
// insert of a new order) guarded four ways, against Azurite: unguarded
// (Table.Transaction), keyed, fenced (the fence cached after the first
// call) and both. It reports the storage transactions of each call
// (transactions/op, with the Meter) next to the time, so that
//
//	benchstat -col /guard bench.txt
//
// compares a keyed write with an unkeyed one.
func BenchmarkWriterTransaction(b *testing.B) {
	ctx := context.Background()
	acct := testenv.Account(b, nil)
	tbl := testenv.OpenTable[Order](b, acct, nil)
	w, err := coord.NewWriter(tbl, nil)
	if err != nil {
		b.Fatal(err)
	}
	guards := []struct {
		name string
		g    coord.Write
	}{
		{"unkeyed", coord.Write{}},
		{"keyed", coord.Write{Key: "k"}},
		{"fenced", coord.Write{Term: 1}},
		{"fenced+keyed", coord.Write{Term: 1, Key: "k"}},
	}
	for _, gd := range guards {
		b.Run("guard="+gd.name, func(b *testing.B) {
			pk := fmt.Sprintf("bench-%s-%d", gd.name, time.Now().UnixNano())
			m := acct.Meter()
			before := m.Snapshot()
			i := 0
			for b.Loop() {
				i++
				g := gd.g
				if g.Key != "" {
					g.Key = fmt.Sprintf("k%d", i)
				}
				var err error
				if g == (coord.Write{}) {
					_, err = tbl.Transaction(ctx, tablekit.InsertAction(Order{Shop: pk, ID: fmt.Sprint(i)}))
				} else {
					_, err = w.Transaction(ctx, g, tablekit.InsertAction(Order{Shop: pk, ID: fmt.Sprint(i)}))
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(m.Snapshot().Sub(before).Total())/float64(i), "transactions/op")
		})
	}
}

// BenchmarkLeadRenewal measures one renewal interval of a leader at the
// default timing (Duration 15 s, RetryPeriod 2 s, each wait jittered to
// 75-100% of it, plus the renewal's round trip) against Azurite, and
// reports it as renewals/hour: the storage transactions an hour of
// leadership costs one lease. Each op takes about 2 s: run it with
// -benchtime=10x.
func BenchmarkLeadRenewal(b *testing.B) {
	ctx := context.Background()
	acct := testenv.Account(b, nil)
	tbl := testenv.OpenTable[tablekit.Entity](b, acct, nil)
	l, err := coord.NewLease(tbl, "leases", "bench", "b", nil)
	if err != nil {
		b.Fatal(err)
	}
	m := acct.Meter()
	var renewals int64
	var led time.Duration
	err = l.Lead(ctx, func(ctx context.Context, term int64) error {
		before := m.Snapshot()
		b.ResetTimer()
		start := time.Now()
		for ctx.Err() == nil && m.Snapshot().Sub(before).Count("table", "UpdateEntity") < int64(b.N) {
			time.Sleep(5 * time.Millisecond)
		}
		led = time.Since(start)
		b.StopTimer()
		renewals = m.Snapshot().Sub(before).Count("table", "UpdateEntity")
		return ctx.Err()
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if renewals > 0 {
		b.ReportMetric(float64(time.Hour)/(float64(led)/float64(renewals)), "renewals/hour")
	}
}
