package tablekit

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

func TestPacerSpacesReservations(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newPacer(1000) // entities per second
	// Idle credit: the first reservations may go at once, up to the burst.
	if at := p.reserve(now, 100); !at.Equal(now.Add(-governorBurst)) {
		t.Fatalf("first reservation at %v, want the start of the burst window", at.Sub(now))
	}
	if at := p.reserve(now, 100); !at.Equal(now) {
		t.Fatalf("second reservation at %v, want now", at.Sub(now))
	}
	// Then one per cost/rate: 100 entities at 1000/s are 100 ms apart.
	if at := p.reserve(now, 100); at.Sub(now) != 100*time.Millisecond {
		t.Fatalf("third reservation %v after now, want 100ms", at.Sub(now))
	}
}

func TestPacerCutsOncePerCooldownAndGrowsBack(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newPacer(2000)
	p.reserve(now, 100)
	if !p.cut(now, 100) || p.rate != 1700 {
		t.Fatalf("first cut: rate %v, want 1700", p.rate)
	}
	if p.cut(now.Add(governorCooldown/2), 100) || p.rate != 1700 {
		t.Fatalf("a second throttle within the cool-down cut again: rate %v", p.rate)
	}
	if !p.cut(now.Add(governorCooldown), 100) || p.rate != 1445 {
		t.Fatalf("cut after the cool-down: rate %v, want 1445", p.rate)
	}
	// Successes raise the rate back to the ceiling, and say so once.
	recovered := 0
	for range 1000 {
		if p.grow(100) {
			recovered++
		}
	}
	if p.rate != 2000 || recovered != 1 {
		t.Fatalf("after growing: rate %v, recovered %d times", p.rate, recovered)
	}
	// Never below a thousandth of the ceiling.
	for i := range 200 {
		p.cut(now.Add(time.Duration(i+10)*governorCooldown), 100)
	}
	if p.rate < 2 {
		t.Fatalf("rate fell to %v", p.rate)
	}
}

// busyAnswer is a throttling error as the SDK returns it, with Azure's
// ServerBusy body saying msg.
func busyAnswer(msg string) error {
	body := `{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"` + msg + `"}}}`
	resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"x-ms-error-code": {"ServerBusy"}}, Body: io.NopCloser(strings.NewReader(body))}
	return wrapError("Transaction", "", "", "", &azcore.ResponseError{StatusCode: http.StatusServiceUnavailable, ErrorCode: "ServerBusy", RawResponse: resp})
}

// TestGovernorCutsTheAccountOnlyForAccountLimits: a ServerBusy whose
// message names the account limit cuts the account's rate as well as the
// partition's; one about a partition cuts only the partition's.
func TestGovernorCutsTheAccountOnlyForAccountLimits(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewGovernor(&GovernorOptions{PartitionRate: 1000, AccountRate: 10_000, Clock: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()

	if err := g.wait(ctx, "T", "p1", 10); err != nil {
		t.Fatal(err)
	}
	g.done("T", "p1", 10, busyAnswer("The server is busy."))
	if g.Rate("T", "p1") != 850 || g.account.rate != 10_000 {
		t.Fatalf("a partition's ServerBusy: partition %v, account %v; want 850 and 10000", g.Rate("T", "p1"), g.account.rate)
	}

	if err := g.wait(ctx, "T", "p2", 10); err != nil {
		t.Fatal(err)
	}
	g.done("T", "p2", 10, busyAnswer("The request rate is over the account limit."))
	if g.Rate("T", "p2") != 850 || g.account.rate != 8500 {
		t.Fatalf("an account's ServerBusy: partition %v, account %v; want 850 and 8500", g.Rate("T", "p2"), g.account.rate)
	}
	// Every write waits for the account's pace too: a third partition,
	// never throttled, is held to the cut account rate.
	if g.Rate("T", "p3") != 1000 {
		t.Fatalf("untouched partition at %v", g.Rate("T", "p3"))
	}
}
