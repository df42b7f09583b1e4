package chaos

import (
	"fmt"
	"slices"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
)

// Kind is a kind of fault.
type Kind string

// The faults an [Injector] injects. Reset, ServerBusy and TimeoutBefore
// reach nothing: the service never sees the try. AnswerLost and
// TimeoutAfter let the service apply the try and then hide its answer, so
// the SDK's retry meets the state the first try left (an InsertEntity
// retried this way comes back EntityAlreadyExists). Delay holds the try
// back, then sends it.
const (
	// Reset fails the try before sending with a transport error
	// ("connection reset by peer"), as a dropped connection does.
	Reset Kind = "reset"
	// AnswerLost sends the try, lets the service apply it, drains and
	// discards the response and returns a transport error.
	AnswerLost Kind = "answer-lost"
	// ServerBusy answers 503 ServerBusy without sending the try, as Azure
	// does when it throttles.
	ServerBusy Kind = "server-busy"
	// TimeoutBefore answers 500 OperationTimedOut without sending the try.
	TimeoutBefore Kind = "timeout-before"
	// TimeoutAfter sends the try, lets the service apply it, discards the
	// response and answers 500 OperationTimedOut (Azure can time out an
	// operation that it completes).
	TimeoutAfter Kind = "timeout-after"
	// Delay sleeps before sending the try (up to [Config.MaxDelay]), or
	// until the request's context ends.
	Delay Kind = "delay"
)

// Kinds returns every Kind, in the order reports list them.
func Kinds() []Kind {
	return []Kind{Reset, AnswerLost, ServerBusy, TimeoutBefore, TimeoutAfter, Delay}
}

// Fails reports whether k makes the try fail (every kind but Delay).
func (k Kind) Fails() bool { return k != Delay && k != "" }

// Applied reports whether the service applied a try that k failed
// (AnswerLost and TimeoutAfter): the caller was not told, and a retry
// meets the new state.
func (k Kind) Applied() bool { return k == AnswerLost || k == TimeoutAfter }

// Config says which faults an [Injector] injects, into which requests and
// how often. A nil *Config means [Mixed](0.2).
type Config struct {
	// The probability of each fault on one try of an eligible request, in
	// [0, 1]; their sum must not exceed 1.
	Reset, AnswerLost, ServerBusy, TimeoutBefore, TimeoutAfter, Delay float64

	// MaxDelay bounds a Delay fault; each delay is between 1 ms and
	// MaxDelay. 0 means 20 ms.
	MaxDelay time.Duration

	// Services limits faults to these services ("table", "queue",
	// "blob"); empty means all.
	Services []string

	// Operations limits faults to these operations, named as tablekit's
	// Meter names them ("Transaction", "InsertEntity", "UpdateEntity",
	// "MergeEntity", "GetMessages", "PutMessage", "DeleteMessage",
	// "PutBlock", "PutBlockList", ...; see tablekit.Meter); empty means
	// all.
	Operations []string

	// MaxConsecutive caps the failing faults injected in a row into one
	// call (an operation and the SDK's retries of it): once a call has
	// failed MaxConsecutive tries in a row, its next try is let through.
	// Calls are told apart by a per-call policy that [Injector.Open]
	// installs, so identical requests sent at once by several callers
	// (which share an identity, see the package doc) each get their own
	// count; without it the count is per identity. 0 means 2, so that the
	// SDK's 3 retries always get a try through and a run makes progress;
	// a negative value means no cap (faults can then outlast the retries).
	MaxConsecutive int

	// MaxFaults stops injecting failing faults after this many; 0 means no
	// limit.
	MaxFaults int
}

// Mixed returns a Config that fails the given fraction of tries (rate, in
// [0, 2/3]), spread over the failing kinds (answer lost 30%, reset 20%,
// ServerBusy 20%, OperationTimedOut after applying 20%, before 10%), and
// delays another rate/2 of the tries by up to 20 ms, on every service and
// operation.
func Mixed(rate float64) *Config {
	return &Config{
		AnswerLost:    0.3 * rate,
		Reset:         0.2 * rate,
		ServerBusy:    0.2 * rate,
		TimeoutAfter:  0.2 * rate,
		TimeoutBefore: 0.1 * rate,
		Delay:         0.5 * rate,
		MaxDelay:      20 * time.Millisecond,
	}
}

// rates returns the probability of each kind, in Kinds order.
func (c *Config) rates() []float64 {
	return []float64{c.Reset, c.AnswerLost, c.ServerBusy, c.TimeoutBefore, c.TimeoutAfter, c.Delay}
}

// withDefaults returns a copy of c with its zero fields set.
func (c Config) withDefaults() Config {
	if c.MaxDelay == 0 {
		c.MaxDelay = 20 * time.Millisecond
	}
	if c.MaxConsecutive == 0 {
		c.MaxConsecutive = 2
	}
	c.Services = slices.Clone(c.Services)
	c.Operations = slices.Clone(c.Operations)
	return c
}

// validate reports a probability out of range, a negative duration or an
// unknown service.
func (c *Config) validate() error {
	bad := func(property, limit, detail string) error {
		return &tablekit.ValidationError{Op: "chaos.New", Entity: "Config", Property: property,
			Limit: limit, Detail: detail, Err: tablekit.ErrInvalidInput}
	}
	var sum float64
	for i, p := range c.rates() {
		if !(p >= 0 && p <= 1) { // also refuses NaN
			return bad(string(Kinds()[i]), "a probability in [0, 1]", fmt.Sprintf("%v", p))
		}
		sum += p
	}
	if sum > 1+1e-9 {
		return bad("", "probabilities that add up to at most 1", fmt.Sprintf("they add up to %v", sum))
	}
	if c.MaxDelay < 0 {
		return bad("MaxDelay", ">= 0", c.MaxDelay.String())
	}
	if c.MaxFaults < 0 {
		return bad("MaxFaults", ">= 0", fmt.Sprint(c.MaxFaults))
	}
	for _, s := range c.Services {
		if s != wire.ServiceTable && s != wire.ServiceQueue && s != wire.ServiceBlob {
			return bad("Services", `"table", "queue" or "blob"`, fmt.Sprintf("unknown service %q", s))
		}
	}
	for _, op := range c.Operations {
		if op == "" {
			return bad("Operations", "operation names as tablekit's Meter names them", "empty operation name")
		}
	}
	return nil
}

// eligible reports whether faults may go into a request of service and
// operation.
func (c *Config) eligible(service, operation string) bool {
	return (len(c.Services) == 0 || slices.Contains(c.Services, service)) &&
		(len(c.Operations) == 0 || slices.Contains(c.Operations, operation))
}
