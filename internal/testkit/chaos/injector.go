package chaos

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// Injector decides, for a seed, which tries of which requests fail and
// how, and records what it injected. Its [Injector.Policy] does the
// injecting. An Injector is safe for concurrent use; one Injector may
// serve several Accounts.
type Injector struct {
	seed int64
	cfg  Config
	on   atomic.Bool

	mu     sync.Mutex
	ids    map[[32]byte]*identityState
	faults int // failing faults injected, for MaxFaults
	events []Event
	stats  stats

	logOnce sync.Once
}

// identityState is what the Injector remembers of one request identity.
type identityState struct {
	seen        int // tries seen so far
	consecutive int // failing faults in a row (calls without a callState)
}

// callState is one call's count of failing faults in a row, shared by its
// tries (guarded by the Injector's mutex).
type callState struct{ consecutive int }

// callPolicy gives every call (an operation, before the SDK's retries) a
// callState of its own, attached to the request as an operation value,
// which the retry policy's clones of the request share.
type callPolicy struct{}

func (callPolicy) Do(req *policy.Request) (*http.Response, error) {
	req.SetOperationValue(&callState{})
	return req.Next()
}

// New returns an enabled Injector that injects the faults cfg describes
// (nil means [Mixed](0.2)), decided from seed. It refuses a Config with a
// probability out of [0, 1], probabilities adding up to more than 1 or an
// unknown service, with a *tablekit.ValidationError.
func New(seed int64, cfg *Config) (*Injector, error) {
	if cfg == nil {
		cfg = Mixed(0.2)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	inj := &Injector{seed: seed, cfg: cfg.withDefaults(), ids: map[[32]byte]*identityState{}}
	inj.on.Store(true)
	return inj, nil
}

// Seed returns the seed the Injector decides from.
func (inj *Injector) Seed() int64 { return inj.seed }

// SetEnabled turns injection on or off. A disabled Injector lets every
// request through and does not count it as eligible (use it to set up and
// to read the final state without faults). New Injectors are enabled.
func (inj *Injector) SetEnabled(on bool) { inj.on.Store(on) }

// Open opens the account of connectionString like tablekit.Open, with the
// Injector's policy as the last of opts.PerRetryPolicies (so it runs on
// every try, after the SDK's retry policy and before the Account's Meter).
// When opts.Retry is the zero value it is set to [FastRetry], so that a run
// with many faults does not sleep for minutes; everything else in opts is
// used as given. Open does not contact the service.
func (inj *Injector) Open(connectionString string, opts *tablekit.Options) (*tablekit.Account, error) {
	var o tablekit.Options
	if opts != nil {
		o = *opts
	}
	// The endpoints are known only once the connection string is parsed:
	// open once to read them (Open does not contact the service).
	probe, err := tablekit.Open(connectionString, &tablekit.Options{ClientOptions: azcore.ClientOptions{Transport: o.Transport}})
	if err != nil {
		return nil, err
	}
	o.PerCallPolicies = append(slices.Clone(o.PerCallPolicies), callPolicy{})
	o.PerRetryPolicies = append(slices.Clone(o.PerRetryPolicies), inj.Policy(EndpointsOf(probe)))
	if isZeroRetry(o.Retry) {
		o.Retry = FastRetry()
	}
	return tablekit.Open(connectionString, &o)
}

// Account opens the test account (internal/testkit/testenv: Azurite or
// AZURE_STORAGE_CONNECTION_STRING) with the Injector, as [Injector.Open]
// does (with opts' Service, or testenv.Service when it is ServiceAuto),
// and fails t if it cannot. When t ends, the Injector's [Stats] are
// logged (once per Injector).
func (inj *Injector) Account(t testing.TB, opts *tablekit.Options) *tablekit.Account {
	t.Helper()
	var o tablekit.Options
	if opts != nil {
		o = *opts
	}
	if o.Service == tablekit.ServiceAuto {
		o.Service = testenv.Service()
	}
	acct, err := inj.Open(testenv.ConnectionString(t), &o)
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	inj.logOnce.Do(func() {
		t.Cleanup(func() { t.Logf("chaos seed %d: %v", inj.seed, inj.Stats()) })
	})
	return acct
}

// Opener returns a function that opens Accounts through the Injector (as
// [Injector.Open]): on the test account (internal/testkit/testenv), or, cosmos,
// on an Azurite of t's own behind package azurite's front in Cosmos DB
// mode with Azure's paging, seeded by the Injector's seed, each Account
// opened with tablekit.ServiceCosmosDB (else as testenv.Service says). It
// is how a suite runs one body on Table storage and on Cosmos DB for
// Table.
func (inj *Injector) Opener(t testing.TB, cosmos bool) func() (*tablekit.Account, error) {
	t.Helper()
	conn, svc := "", testenv.Service()
	if cosmos {
		svc = tablekit.ServiceCosmosDB
		conn = azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: uint64(inj.seed)}}).ConnectionString()
	} else {
		conn = testenv.ConnectionString(t)
	}
	return func() (*tablekit.Account, error) {
		return inj.Open(conn, &tablekit.Options{Service: svc})
	}
}

// FastRetry returns the SDK retry options [Injector.Open] uses by default:
// azcore's 3 retries, with delays of a few milliseconds (4 ms doubling, at
// most 40 ms) instead of azcore's 0.8 s doubling.
func FastRetry() policy.RetryOptions {
	return policy.RetryOptions{MaxRetries: 3, RetryDelay: 4 * time.Millisecond, MaxRetryDelay: 40 * time.Millisecond}
}

func isZeroRetry(r policy.RetryOptions) bool {
	return r.MaxRetries == 0 && r.TryTimeout == 0 && r.RetryDelay == 0 && r.MaxRetryDelay == 0 &&
		r.StatusCodes == nil && r.ShouldRetry == nil
}

type noFaultsKey struct{}

// NoFaults returns a context under which no Injector injects anything:
// requests made with it go through and are not counted as eligible. Use it
// for setup and for reading the final state while other goroutines still
// run under faults.
func NoFaults(ctx context.Context) context.Context {
	return context.WithValue(ctx, noFaultsKey{}, true)
}

// tracker collects the faults injected into the requests of one operation
// (see Writer.Do).
type tracker struct {
	mu    sync.Mutex
	kinds []Kind
}

type trackerKey struct{}

func withTracker(ctx context.Context, tr *tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, tr)
}

func (tr *tracker) add(k Kind) {
	tr.mu.Lock()
	tr.kinds = append(tr.kinds, k)
	tr.mu.Unlock()
}

func (tr *tracker) list() []Kind {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.kinds)
}
