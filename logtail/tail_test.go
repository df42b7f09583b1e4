package logtail_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/logtail"
)

type event struct {
	logtail.Entry
	N   int    `table:"N"`
	Msg string `table:"Msg"`
}

// dotnetRowKey is the design guide's .NET log tail RowKey, computed here
// independently of package keys:
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.Ticks).
func dotnetRowKey(t time.Time) string {
	const maxValueTicks = 3155378975999999999 // DateTime.MaxValue.Ticks
	const epochTicks = 621355968000000000     // new DateTime(1970,1,1).Ticks
	ticks := t.Unix()*10_000_000 + int64(t.Nanosecond()/100) + epochTicks
	return fmt.Sprintf("%019d", maxValueTicks-ticks)
}

func TestDotnetVector(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)
	// DateTime(2024,1,2,3,4,5).Ticks + 1234567 = 638397614451234567
	const want = "2516981361548765432"
	if got := dotnetRowKey(at); got != want {
		t.Fatalf("formula: got %s, want %s", got, want)
	}
	e := logtail.Entry{RowKey: want}
	if got := e.Time(); !got.Equal(at.Truncate(100 * time.Nanosecond)) {
		t.Fatalf("Entry.Time of a .NET key: got %v", got)
	}
	inv, err := keys.InvertedTicks(at)
	if err != nil || inv != want {
		t.Fatalf("keys.InvertedTicks = %q, %v; want %q", inv, err, want)
	}
}

func newLog(t *testing.T, acct *tablekit.Account, opts *logtail.Options) (*logtail.Log[event], *tablekit.Table[event]) {
	t.Helper()
	tbl, err := tablekit.OpenTable[event](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := logtail.New(tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, tbl
}

func ns(es []event) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.N
	}
	return out
}

// checkNewestFirst checks strictly ascending RowKeys and non-increasing times.
func checkNewestFirst(t *testing.T, es []event) {
	t.Helper()
	for i := 1; i < len(es); i++ {
		if es[i-1].RowKey >= es[i].RowKey {
			t.Fatalf("entries %d and %d out of order: %q >= %q", i-1, i, es[i-1].RowKey, es[i].RowKey)
		}
		if es[i-1].Time().Before(es[i].Time()) {
			t.Fatalf("entry %d (%v) older than entry %d (%v)", i-1, es[i-1].Time(), i, es[i].Time())
		}
	}
}

func TestLogTail(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	log, tbl := newLog(t, acct, nil)
	const pk = "device-1"
	base := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	at := func(i int) time.Time {
		switch {
		case i < 990: // groups of three entries share a tick
			return base.Add(time.Duration(i/3) * time.Millisecond)
		case i < 994: // distinct
			return base.Add(time.Duration(400+i-990) * time.Millisecond)
		default: // the six newest share a tick
			return base.Add(500 * time.Millisecond)
		}
	}

	// 990 entries appended concurrently, then 10 one after the other.
	var wg sync.WaitGroup
	errs := make(chan error, 990)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < 990; i += 8 {
				if _, err := log.AppendAt(ctx, pk, at(i), event{N: i, Msg: fmt.Sprint("entry ", i)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 990; i < 1000; i++ {
		e, err := log.AppendAt(ctx, pk, at(i), event{N: i})
		if err != nil {
			t.Fatal(err)
		}
		if e.PartitionKey != pk || !e.Time().Equal(at(i)) {
			t.Fatalf("Append returned keys %q/%q (time %v), want partition %q at %v", e.PartitionKey, e.RowKey, e.Time(), pk, at(i))
		}
	}

	// A row a .NET program wrote with the guide's formula, between
	// entries 992 and 993.
	netTime := base.Add(402*time.Millisecond + 500*time.Microsecond)
	raw, err := tablekit.OpenTable[tablekit.Entity](acct, tbl.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Insert(ctx, tablekit.Entity{PartitionKey: pk, RowKey: dotnetRowKey(netTime),
		Properties: map[string]any{"N": int64(-1), "Msg": "written by .NET"}}); err != nil {
		t.Fatal(err)
	}

	want := []int{999, 998, 997, 996, 995, 994, 993, -1, 992, 991}
	latest, err := newest(t, ctx, log, pk, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ns(latest), want) {
		t.Fatalf("Latest(10) = %v, want %v", ns(latest), want)
	}
	checkNewestFirst(t, latest)
	if !latest[7].Time().Equal(netTime) {
		t.Fatalf(".NET row time %v, want %v", latest[7].Time(), netTime)
	}

	// Page size 7: the service returns short pages, Latest still gives 10.
	log7, err := logtail.New(tbl, &logtail.Options{PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	latest7, err := newest(t, ctx, log7, pk, 10)
	if err != nil {
		t.Fatal(err)
	}
	cost := acct.Meter().Snapshot().Sub(before)
	if !slices.Equal(ns(latest7), want) {
		t.Fatalf("Latest(10) with page size 7 = %v, want %v", ns(latest7), want)
	}
	// 2 pages from Azurite; Azure may cut pages short.
	if n := cost.Count("table", "QueryEntities"); !onCosmos() && (n < 2 || (n != 2 && !testenv.PagesAsAzure())) {
		t.Fatalf("Latest(10) with page size 7 took %d queries (%v), want 2", n, cost)
	}

	// Since: everything at or after 400 ms.
	var since []event
	for e, err := range log.Window(ctx, pk, base.Add(400*time.Millisecond), time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		since = append(since, e)
	}
	if w := []int{999, 998, 997, 996, 995, 994, 993, -1, 992, 991, 990}; !slices.Equal(ns(since), w) {
		t.Fatalf("Since = %v, want %v", ns(since), w)
	}

	// Window [100 ms, 200 ms): entries 300..599.
	var win []event
	for e, err := range log7.Window(ctx, pk, base.Add(100*time.Millisecond), base.Add(200*time.Millisecond)) {
		if err != nil {
			t.Fatal(err)
		}
		win = append(win, e)
	}
	checkNewestFirst(t, win)
	got := ns(win)
	slices.Sort(got)
	for i, n := range got {
		if n != 300+i {
			t.Fatalf("Window returned entries %v..., want 300..599", got[:min(len(got), 10)])
		}
	}
	if len(got) != 300 {
		t.Fatalf("Window returned %d entries, want 300", len(got))
	}

	// Pages of 100, newest first, all 1,001 entries exactly once.
	all, pages, err := pageThrough(t, ctx, log, pk, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1001 || (pages != 11 && !onCosmos()) {
		t.Fatalf("paging gave %d entries in %d pages, want 1001 in 11", len(all), pages)
	}
	checkNewestFirst(t, all)
	if !slices.Equal(ns(all[:10]), want) {
		t.Fatalf("first page starts %v, want %v", ns(all[:10]), want)
	}

	// A token is bound to its partition.
	if onCosmos() {
		return // no tokens: Page is refused
	}
	p, err := log.Page(ctx, pk, &logtail.PageOptions{PageSize: 100})
	if err != nil || p.Continuation == "" {
		t.Fatalf("a page of 100: %d entries, %v", len(p.Items), err)
	}
	if _, err := log.Page(ctx, "device-2", &logtail.PageOptions{Continuation: p.Continuation}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("token of another partition: %v, want ErrInvalidInput", err)
	}
}

func TestShardedLogTail(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	const shards = 4
	log, _ := newLog(t, acct, &logtail.Options{Shards: shards, PageSize: 9})
	const pk = "hot-device"
	base := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	buckets := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < 200; i += 4 {
				e, err := log.AppendAt(ctx, pk, base.Add(time.Duration(i)*time.Second), event{N: i})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				buckets[e.PartitionKey]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(buckets) < 3 {
		t.Fatalf("200 entries landed in partitions %v; want them spread over the %d buckets", buckets, shards)
	}
	for k := range buckets {
		if _, got, err := keys.ParseShardedKey(k, shards); err != nil || got != pk {
			t.Fatalf("stored partition %q is not keys.ShardedKey(bucket, %d, %q): %q, %v", k, shards, pk, got, err)
		}
	}

	before := acct.Meter().Snapshot()
	latest, err := newest(t, ctx, log, pk, 15)
	if err != nil {
		t.Fatal(err)
	}
	cost := acct.Meter().Snapshot().Sub(before)
	want := make([]int, 15)
	for i := range want {
		want[i] = 199 - i
	}
	if !slices.Equal(ns(latest), want) {
		t.Fatalf("sharded Latest(15) = %v, want %v", ns(latest), want)
	}
	if q := cost.Count("table", "QueryEntities"); q < shards && !onCosmos() {
		t.Fatalf("sharded Latest took %d queries, want at least one per bucket (%d)", q, shards)
	}

	var win []event
	for e, err := range log.Window(ctx, pk, base.Add(50*time.Second), base.Add(120*time.Second)) {
		if err != nil {
			t.Fatal(err)
		}
		win = append(win, e)
	}
	checkNewestFirst(t, win)
	if len(win) != 70 || win[0].N != 119 || win[69].N != 50 {
		t.Fatalf("sharded Window: %d entries from %d to %d, want 70 from 119 to 50", len(win), win[0].N, win[len(win)-1].N)
	}

	all, _, err := pageThrough(t, ctx, log, pk, 30)
	if err != nil {
		t.Fatal(err)
	}
	checkNewestFirst(t, all)
	if len(all) != 200 || all[0].N != 199 || all[199].N != 0 {
		t.Fatalf("sharded paging: %d entries, want 200 from 199 to 0", len(all))
	}
}

// TestShardedLayout: a sharded log stores an entry of partition pk under
// keys.ShardedKey(keys.Shard(RowKey), n, pk), the one layout of package
// keys, with pk as it is, also when pk holds characters that a compound
// key escapes (before, logtail built keys.Compound(bucket, pk), which
// differs for them); reads find every entry.
func TestShardedLayout(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	const shards = 3
	log, tbl := newLog(t, acct, &logtail.Options{Shards: shards})
	const pk = "host.example.com a!b~c"
	base := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	for i := range 12 {
		e, err := log.AppendAt(ctx, pk, base.Add(time.Duration(i)*time.Second), event{N: i})
		if err != nil {
			t.Fatal(err)
		}
		b, err := keys.Shard(e.RowKey, shards)
		if err != nil {
			t.Fatal(err)
		}
		want, err := keys.ShardedKey(b, shards, pk)
		if err != nil {
			t.Fatal(err)
		}
		if e.PartitionKey != want {
			t.Fatalf("entry %d stored in partition %q, want keys.ShardedKey = %q", i, e.PartitionKey, want)
		}
		if old, _ := keys.Compound(strconv.Itoa(b), pk); old == e.PartitionKey { // one digit: shards < 10
			t.Fatalf("the test partition %q does not tell the layouts apart", pk)
		}
		if _, err := tbl.Get(ctx, want, e.RowKey); err != nil {
			t.Fatalf("entry %d is not at %s/%s: %v", i, want, e.RowKey, err)
		}
	}
	latest, err := newest(t, ctx, log, pk, 5)
	if err != nil {
		t.Fatal(err)
	}
	if w := []int{11, 10, 9, 8, 7}; !slices.Equal(ns(latest), w) {
		t.Fatalf("Latest(5) = %v, want %v", ns(latest), w)
	}
	var win []event
	for e, err := range log.Window(ctx, pk, base.Add(2*time.Second), base.Add(5*time.Second)) {
		if err != nil {
			t.Fatal(err)
		}
		win = append(win, e)
	}
	if w := []int{4, 3, 2}; !slices.Equal(ns(win), w) {
		t.Fatalf("Window = %v, want %v", ns(win), w)
	}
	all, _, err := pageThrough(t, ctx, log, pk, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 12 || all[0].N != 11 || all[11].N != 0 {
		t.Fatalf("paging: %v, want 11..0", ns(all))
	}
}

// TestPerCallPageSize: Options.PageSize and, for one Page,
// PageOptions.PageSize set the most entities one request asks for; the
// results do not change, the request count does.
func TestPerCallPageSize(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	log, tbl := newLog(t, acct, &logtail.Options{PageSize: 4})
	const pk = "device"
	base := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	items := make([]event, 30)
	for i := range items {
		rk, err := keys.DescendingKey(base.Add(time.Duration(i)*time.Second), 0)
		if err != nil {
			t.Fatal(err)
		}
		items[i] = event{Entry: logtail.Entry{PartitionKey: pk, RowKey: rk}, N: i}
	}
	if _, err := tbl.BulkWriter(nil).Insert(ctx, items); err != nil {
		t.Fatal(err)
	}
	if onCosmos() {
		// Latest and Page, whose request counts this test checks, are
		// refused on Cosmos DB before anything is sent.
		before := acct.Meter().Snapshot()
		if _, err := log.Latest(ctx, pk, 10); !refusedOnCosmos(err) {
			t.Errorf("Latest on Cosmos DB: %v", err)
		}
		if _, err := log.Page(ctx, pk, &logtail.PageOptions{PageSize: 9}); !refusedOnCosmos(err) {
			t.Errorf("Page on Cosmos DB: %v", err)
		}
		if n := acct.Meter().Snapshot().Sub(before).Total(); n != 0 {
			t.Errorf("the refused reads sent %d requests", n)
		}
		return
	}
	want := make([]int, 10)
	for i := range want {
		want[i] = 29 - i
	}
	for _, tc := range []struct {
		pageSize, queries int
	}{
		{4, 3},  // 4+4+2
		{3, 4},  // 3+3+3+1
		{10, 1}, // one request
		{0, 1},  // the service's maximum: one request
	} {
		l := log
		if tc.pageSize != 4 {
			var err error
			if l, err = logtail.New(tbl, &logtail.Options{PageSize: tc.pageSize}); err != nil {
				t.Fatal(err)
			}
		}
		before := acct.Meter().Snapshot()
		got, err := l.Latest(ctx, pk, 10)
		if err != nil {
			t.Fatal(err)
		}
		cost := acct.Meter().Snapshot().Sub(before)
		if !slices.Equal(ns(got), want) {
			t.Fatalf("Latest(10) with PageSize %d = %v, want %v", tc.pageSize, ns(got), want)
		}
		if q := cost.Count("table", "QueryEntities"); q < int64(tc.queries) || (q != int64(tc.queries) && !testenv.PagesAsAzure()) {
			t.Errorf("Latest(10) with PageSize %d took %d queries, want %d (more only where pages may be cut short)", tc.pageSize, q, tc.queries)
		}
	}
	for _, tc := range []struct {
		opts          *logtail.PageOptions
		size, queries int
	}{
		{nil, 4, 1}, // 0: the Log's PageSize
		{&logtail.PageOptions{PageSize: 9}, 9, 1},     // the call's, in one request
		{&logtail.PageOptions{PageSize: 1000}, 30, 1}, // short: the end of the log
	} {
		before := acct.Meter().Snapshot()
		p, err := log.Page(ctx, pk, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		cost := acct.Meter().Snapshot().Sub(before)
		if len(p.Items) != tc.size || p.Items[0].N != 29 {
			t.Fatalf("Page(%+v): %v, want %d entries from 29", tc.opts, ns(p.Items), tc.size)
		}
		if (p.Continuation == "") != (tc.size == 30) {
			t.Errorf("Page(%+v): continuation %q", tc.opts, p.Continuation)
		}
		if q := cost.Count("table", "QueryEntities"); q != int64(tc.queries) {
			t.Errorf("Page(%+v) took %d queries, want %d", tc.opts, q, tc.queries)
		}
	}
	// Without Options.PageSize, a page holds DefaultPageSize entries.
	plain, err := logtail.New(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := plain.Page(ctx, pk, &logtail.PageOptions{PageSize: 0}); err != nil || len(p.Items) != min(30, 100) {
		t.Fatalf("Page with no page size: %d entries, %v", len(p.Items), err)
	}
}

// wantRefusal checks that err is a *tablekit.ValidationError matching
// sentinel whose Op is op, and that the operation is not (also) named in
// its Detail.
func wantRefusal(t *testing.T, what string, err error, op string, sentinel error) {
	t.Helper()
	var ve *tablekit.ValidationError
	switch {
	case !errors.As(err, &ve):
		t.Errorf("%s: %v (%T), want a *tablekit.ValidationError", what, err, err)
	case ve.Op != op:
		t.Errorf("%s: Op %q, want %q (%v)", what, ve.Op, op, err)
	case !errors.Is(err, sentinel):
		t.Errorf("%s: %v, want it to match %v", what, err, sentinel)
	case strings.Contains(ve.Detail, "logtail") || strings.Contains(ve.Detail, op):
		t.Errorf("%s: Detail %q names the operation or package", what, ve.Detail)
	}
}

func TestLogTailInput(t *testing.T) {
	ctx := context.Background()
	_, err := logtail.New[event](nil, nil)
	wantRefusal(t, "New(nil)", err, "logtail.New", tablekit.ErrInvalidInput)
	acct, err := tablekit.Open("UseDevelopmentStorage=true", nil) // nothing is sent
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[event](acct, "Unused", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = logtail.New(tbl, &logtail.Options{Shards: -1})
	wantRefusal(t, "Shards -1", err, "logtail.New", tablekit.ErrInvalidInput)
	_, err = logtail.New(tbl, &logtail.Options{PageSize: 1001})
	wantRefusal(t, "PageSize 1001", err, "logtail.New", tablekit.ErrInvalidInput)
	log, err := logtail.New(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	sharded, err := logtail.New(tbl, &logtail.Options{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Checked before anything is sent (the table does not exist).
	_, err = log.Append(ctx, "a/b", event{})
	wantRefusal(t, "Append to a partition with '/'", err, "logtail.Log.Append", tablekit.ErrInvalidKey)
	_, err = sharded.Append(ctx, strings.Repeat("x", keys.MaxKeyLen), event{})
	wantRefusal(t, "sharded Append to a partition too long for a bucket prefix", err, "logtail.Log.Append", tablekit.ErrInvalidKey)
	_, err = log.AppendAt(ctx, "a", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), event{})
	wantRefusal(t, "AppendAt after 9999", err, "logtail.Log.AppendAt", tablekit.ErrInvalidInput)
	_, err = log.Latest(ctx, "a", 0)
	wantRefusal(t, "Latest(0)", err, "logtail.Log.Latest", tablekit.ErrInvalidInput)
	_, err = sharded.Latest(ctx, "a#b", 5)
	wantRefusal(t, "Latest of a partition with '#'", err, "logtail.Log.Latest", tablekit.ErrInvalidKey)
	_, err = log.Page(ctx, "a", &logtail.PageOptions{Continuation: "garbage"})
	wantRefusal(t, "Page with a bad token", err, "logtail.Log.Page", tablekit.ErrInvalidInput)
	_, err = log.Page(ctx, "a", &logtail.PageOptions{PageSize: -1})
	wantRefusal(t, "Page with PageSize -1", err, "logtail.Log.Page", tablekit.ErrInvalidInput)
	for _, err := range log.Window(ctx, "a", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}) {
		wantRefusal(t, "Window from after 9999", err, "logtail.Log.Window", tablekit.ErrInvalidInput)
	}
	for _, err := range sharded.Window(ctx, "a?b", time.Now(), time.Time{}) {
		wantRefusal(t, "Window of a partition with '?'", err, "logtail.Log.Window", tablekit.ErrInvalidKey)
	}
}
