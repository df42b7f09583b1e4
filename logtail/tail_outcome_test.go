package logtail_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// TestAppendLostAnswer: an Append whose insert was applied but whose answer
// was lost is acknowledged, and stored once; an Append that never reached
// the service is not. The RowKey is unique to the call, so the insert's
// own retry meeting "already exists", or a read of that key, settles it.
// (Since lost answers followed by a conflict became ErrOutcomeUnknown in
// the core, Append returned that error for entries it had stored, against
// its documentation; the chaos suite found it.)
func TestAppendLostAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    chaos.Config
		stored bool
	}{
		// The first try is applied, its answer lost; the retry meets the entity.
		{"conflict on retry", chaos.Config{AnswerLost: 1, MaxConsecutive: 1}, true},
		// Every try is applied or meets the entity, and every answer is lost.
		{"no answer at all", chaos.Config{AnswerLost: 1, MaxConsecutive: -1}, true},
		// A 500 after applying, then the retry meets the entity.
		{"timeout after applying", chaos.Config{TimeoutAfter: 1, MaxConsecutive: 1}, true},
		// No try reaches the service.
		{"never sent", chaos.Config{Reset: 1, MaxConsecutive: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := tc.cfg
			cfg.Services, cfg.Operations = []string{"table"}, []string{"InsertEntity"}
			inj, err := chaos.New(1, &cfg)
			if err != nil {
				t.Fatal(err)
			}
			acct := inj.Account(t, nil)
			inj.SetEnabled(false)
			l, _ := newLog(t, acct, nil)
			inj.SetEnabled(true)
			got, err := l.Append(ctx, "p", event{N: 1, Msg: "x"})
			inj.SetEnabled(false)
			es, lerr := newest(t, ctx, l, "p", 10)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if st := inj.Stats(); st.Faults() == 0 {
				t.Fatalf("no fault injected: %v", st)
			}
			if !tc.stored {
				if err == nil || len(es) != 0 {
					t.Fatalf("Append = %v, %d entries stored; want an error and none", err, len(es))
				}
				return
			}
			if err != nil {
				t.Fatalf("Append: %v (outcome %s); the entry is stored: %d entries", err, chaos.OutcomeOf(err), len(es))
			}
			if len(es) != 1 || es[0].RowKey != got.RowKey || es[0].N != 1 {
				t.Fatalf("stored %+v, want exactly the entry Append returned (%+v)", es, got)
			}
		})
	}
}

// lostThenBusy lets the first Insert Entity try reach the service and
// loses its answer, then answers every later try 503 ServerBusy without
// sending it.
type lostThenBusy struct{ tries atomic.Int32 }

func (p *lostThenBusy) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	if r.Method != http.MethodPost || strings.Contains(r.URL.Path, "$batch") || strings.HasSuffix(r.URL.Path, "/Tables") {
		return req.Next()
	}
	if p.tries.Add(1) == 1 {
		resp, err := req.Next()
		if err != nil {
			return resp, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (test: answer lost)")
	}
	body := `{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}`
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Server Busy",
		Header: http.Header{"X-Ms-Error-Code": {"ServerBusy"}, "Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// TestAppendLostThenThrottled: the first try of an Append is applied and
// its answer lost, every retry is throttled. tablekit's Insert reports the
// write throttled and its outcome unknown, but the entry is stored: Append
// reads its key and reports success. (Before, Append returned the 503 for
// a stored entry; the chaos suite found it at full size.)
func TestAppendLostThenThrottled(t *testing.T) {
	ctx := context.Background()
	p := &lostThenBusy{}
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{p}, Retry: chaos.FastRetry()}})
	l, _ := newLog(t, acct, nil)
	got, err := l.Append(ctx, "p", event{N: 1, Msg: "x"})
	if n := p.tries.Load(); n < 2 {
		t.Fatalf("%d insert tries, want the SDK to retry", n)
	}
	es, lerr := newest(t, ctx, l, "p", 10)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(es) != 1 {
		t.Fatalf("%d entries stored, want 1", len(es))
	}
	if err != nil {
		t.Fatalf("Append: %v; the entry is stored", err)
	}
	if es[0].RowKey != got.RowKey {
		t.Fatalf("stored %+v, Append returned %+v", es[0], got)
	}
}

// loseFirstInsert lets the first Insert Entity try reach the service and
// loses its answer; later tries pass.
type loseFirstInsert struct{ tries atomic.Int32 }

func (p *loseFirstInsert) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	if r.Method != http.MethodPost || strings.Contains(r.URL.Path, "$batch") || strings.HasSuffix(r.URL.Path, "/Tables") {
		return req.Next()
	}
	resp, err := req.Next()
	if p.tries.Add(1) == 1 && err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (test: answer lost)")
	}
	return resp, err
}

// cancelAfterConflict ends the call's context once the call (all its
// tries) has its answer, when that answer is 409: the moment a caller's
// deadline strikes just after the SDK's retry met the entity.
type cancelAfterConflict struct{ cancel context.CancelFunc }

func (p *cancelAfterConflict) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err == nil && resp.StatusCode == http.StatusConflict {
		p.cancel()
	}
	return resp, err
}

// TestAppendLostAnswerContextEnds: the retry of an Append whose first try
// was applied meets its own entry, and the caller's context ends just
// after that answer came. The conflict on the call's own key settles it:
// Append succeeds. (Before, Append gave up settling once ctx had ended
// and returned the conflict, as an unknown outcome, for an entry it had
// stored; the chaos suite found it when a writer's deadline struck at that
// moment.)
func TestAppendLostAnswerContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lose := &loseFirstInsert{}
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{&cancelAfterConflict{cancel: cancel}}, PerRetryPolicies: []policy.Policy{lose}, Retry: chaos.FastRetry()}})
	l, _ := newLog(t, acct, nil)
	got, err := l.Append(ctx, "p", event{N: 1, Msg: "x"})
	if n := lose.tries.Load(); n != 2 {
		t.Fatalf("%d insert tries, want 2 (the lost one and the retry)", n)
	}
	if ctx.Err() == nil {
		t.Fatal("the context did not end")
	}
	if err != nil {
		t.Fatalf("Append: %v; the entry is stored under the call's own key", err)
	}
	es, lerr := newest(t, context.Background(), l, "p", 10)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(es) != 1 || es[0].RowKey != got.RowKey {
		t.Fatalf("stored %+v, Append returned %+v", es, got)
	}
}
