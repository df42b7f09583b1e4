package logtail_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// onCosmos reports whether the test account is Cosmos DB's (the tests run
// behind the front in Cosmos DB mode), where Latest and Page are refused:
// the log tail pattern relies on key order.
func onCosmos() bool { return testenv.Service() == tablekit.ServiceCosmosDB }

// newest returns the n newest entries of pk, newest first: l.Latest on
// Table storage; on Cosmos DB, which refuses Latest (checked here), what
// Latest returns elsewhere, the first n entries of a Window over the
// whole log.
func newest[T logtail.HasEntry](t testing.TB, ctx context.Context, l *logtail.Log[T], pk string, n int) ([]T, error) {
	t.Helper()
	if !onCosmos() {
		return l.Latest(ctx, pk, n)
	}
	if _, err := l.Latest(ctx, pk, n); !refusedOnCosmos(err) {
		t.Errorf("Latest on Cosmos DB: %v, want ErrUnsupported naming Cosmos DB", err)
	}
	var out []T
	for e, err := range l.Window(ctx, pk, time.Time{}, time.Time{}) {
		if err != nil {
			return out, err
		}
		if len(out) == n {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// refusedOnCosmos reports whether err is Latest's or Page's refusal on
// Cosmos DB.
func refusedOnCosmos(err error) bool {
	return errors.Is(err, tablekit.ErrUnsupported) && strings.Contains(err.Error(), "Cosmos DB")
}

// pageThrough reads every entry of pk with Page in pages of size, newest
// first, and returns them and how many pages it took; on Cosmos DB, which
// refuses Page (checked here), the entries of a Window over the whole log,
// in no pages.
func pageThrough[T logtail.HasEntry](t testing.TB, ctx context.Context, l *logtail.Log[T], pk string, size int) ([]T, int, error) {
	t.Helper()
	if onCosmos() {
		if _, err := l.Page(ctx, pk, &logtail.PageOptions{PageSize: size}); !refusedOnCosmos(err) {
			t.Errorf("Page on Cosmos DB: %v, want ErrUnsupported naming Cosmos DB", err)
		}
		all, err := newest(t, ctx, l, pk, 1<<30)
		return all, 0, err
	}
	var all []T
	pages := 0
	for tok := ""; ; {
		p, err := l.Page(ctx, pk, &logtail.PageOptions{PageSize: size, Continuation: tok})
		if err != nil {
			return all, pages, err
		}
		pages++
		all = append(all, p.Items...)
		if tok = p.Continuation; tok == "" {
			return all, pages, nil
		}
	}
}
