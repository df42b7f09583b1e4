package sections

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/patterns"
)

// DataSeries shows the data series pattern: a whole series in one entity,
// read with one point query, updated slot by slot with optimistic
// concurrency.
func DataSeries() demo.Section {
	return demo.Section{
		Name:        "dataseries",
		Description: "data series: 24 hourly counts in one entity (H00..H23), concurrent increments with ETags and retries",
		Run:         runDataSeries,
	}
}

func runDataSeries(ctx context.Context, env *demo.Env) error {
	tbl, err := patEntityTable(ctx, env, "DataSeries")
	if err != nil {
		return err
	}
	meter := env.Account.Meter()
	s, err := patterns.NewSeries(tbl, nil)
	if err != nil {
		return err
	}
	env.Say("one entity per employee and day holds the messages sent in each hour, properties H00..H23")

	const writers, each = 4, 25
	before := meter.Snapshot()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range each {
				if _, err := s.Add(ctx, "emp000223", "2025-03-14", 9, 1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	cost := meter.Snapshot().Sub(before)
	env.Say("%d writers added 1 to hour 9, %d times each: %v", writers, each, cost)
	env.Say("each increment reads the entity and merges the slot only if the ETag is unchanged; %d merges lost the race and were retried after a random pause",
		cost.Count("table", "MergeEntity")+cost.Count("table", "InsertEntity")-writers*each)
	if err := s.Set(ctx, "emp000223", "2025-03-14", 17, 42); err != nil {
		return err
	}

	before = meter.Snapshot()
	values, err := s.Get(ctx, "emp000223", "2025-03-14")
	if err != nil {
		return err
	}
	env.Say("the whole day in one point query: H09=%d, H17=%d (%v)", values[9], values[17], meter.Snapshot().Sub(before))
	if values[9] != writers*each {
		return fmt.Errorf("hour 9 holds %d, want %d", values[9], writers*each)
	}

	_, err = patterns.NewSeries(tbl, &patterns.SeriesOptions{Prefix: "Min", Slots: 1440})
	if !errors.Is(err, tablekit.ErrTooLarge) {
		return fmt.Errorf("a 1,440-slot series: %v", err)
	}
	env.Say("a series of every minute of a day does not fit one entity: %v", err)
	return nil
}
