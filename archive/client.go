package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/opname"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
)

// Suffixes of the default poison queue and claim-check container names.
const (
	poisonSuffix = "-poison"
	claimsSuffix = "-claims"
	maxNameLen   = 63 // queue and container names
)

// suffixedName returns queue+suffix, the default name of a poison queue
// or claim-check container (what), or op's refusal when the suffix makes
// it longer than the service allows; instead says how else to name it.
func suffixedName(op, queue, suffix, what, instead string) (string, error) {
	name := queue + suffix
	if len(name) > maxNameLen {
		return "", &tablekit.ValidationError{
			Op:     op,
			Entity: queue,
			Detail: fmt.Sprintf("the %s name %q would be %d characters long: the %q suffix makes it longer than the %d characters the service allows; use a queue name of at most %d characters, or %s",
				what, name, len(name), suffix, maxNameLen, maxNameLen-len(suffix), instead),
			Size:  len(name),
			Limit: fmt.Sprintf("<= %d characters in the work queue's name (%d with %q)", maxNameLen-len(suffix), maxNameLen, suffix),
			Err:   tablekit.ErrInvalidKey,
		}
	}
	var err error
	if suffix == poisonSuffix {
		err = names.CheckQueue(name)
	} else {
		err = names.CheckContainer(name)
	}
	return name, withOp(op, err)
}

// ClientOptions configures a [Client]. A nil *ClientOptions means the
// defaults.
type ClientOptions struct {
	// ClaimCheckThreshold is the largest message text (after base64) sent
	// in the queue; a larger envelope's payload goes to a blob and the
	// message carries the blob's name. 0 means 60 KiB, which leaves room
	// below the queue's 64 KiB limit for the error a failed attempt
	// records in the message. Values above 64 KiB are refused.
	ClaimCheckThreshold int
	// Retry is how often and how patiently Enqueue and Requeue try the
	// queue request (see [Client.Enqueue]); each zero field means its
	// default: 4 tries, 800 ms doubling up to 8 s, full jitter (about
	// what the SDK's own retries do).
	Retry tablekit.RetryPolicy
}

// defaultEnqueueRetry is the default of ClientOptions.Retry.
var defaultEnqueueRetry = tablekit.RetryPolicy{MaxAttempts: 4, BaseDelay: 800 * time.Millisecond, MaxDelay: 8 * time.Second}

// EnqueueOptions configures one [Client.Enqueue]. nil means the defaults.
type EnqueueOptions struct {
	// Delay hides the message for this long before its first delivery
	// (whole seconds; rounded up). 0: deliverable at once.
	Delay time.Duration
	// TimeToLive is how long the queue keeps the message (whole seconds;
	// rounded up). 0 means the service default (7 days); a negative value
	// means never expire.
	TimeToLive time.Duration
}

// Client sends typed messages to a work queue: an envelope {kind, payload}
// as base64 JSON, with payloads too large for a queue message stored in a
// blob container (claim check, blobs named "claims/<random>.json"). Make
// one with [OpenClient] (or [NewClient] for SDK clients, e.g. opened from
// SAS URLs). A Client is safe for concurrent use.
type Client struct {
	queue         *azqueue.QueueClient
	name          string
	container     *container.Client
	containerName string
	threshold     int
	retry         tablekit.RetryPolicy
}

// claimPrefix starts the name of every claim-check blob.
const claimPrefix = "claims/"

// NewClient returns a Client sending to queue. claims is the container for
// claim-check blobs, created on first use; nil means payloads over the
// threshold are refused with an error matching tablekit.ErrTooLarge. It
// is for queues and containers opened otherwise than from an Account,
// such as a sender's SAS URLs (sas.OpenQueue, sas.OpenContainer).
// Bad input is refused with a *tablekit.ValidationError whose Op is
// "archive.NewClient"; nothing is sent.
func NewClient(queue *azqueue.QueueClient, claims *container.Client, opts *ClientOptions) (*Client, error) {
	return newClient("archive.NewClient", queue, claims, opts)
}

func newClient(op string, queue *azqueue.QueueClient, claims *container.Client, opts *ClientOptions) (*Client, error) {
	if queue == nil {
		return nil, invalid(op, "queue", "queue is nil")
	}
	c := &Client{queue: queue, name: nameOf(queue.URL()), container: claims, threshold: 60 * 1024, retry: defaultEnqueueRetry}
	if err := names.CheckQueue(c.name); err != nil {
		return nil, withOp(op, err)
	}
	if claims != nil {
		c.containerName = nameOf(claims.URL())
		if err := names.CheckContainer(c.containerName); err != nil {
			return nil, withOp(op, err)
		}
	}
	if opts != nil {
		if err := timing.Policy(opts.Retry).Validate(op); err != nil {
			return nil, err
		}
		c.retry = tablekit.RetryPolicy(timing.Policy(opts.Retry).WithDefaults(timing.Policy(defaultEnqueueRetry)))
		switch {
		case opts.ClaimCheckThreshold < 0 || opts.ClaimCheckThreshold > maxMessageSize:
			return nil, invalid(op, "ClaimCheckThreshold", fmt.Sprintf("ClaimCheckThreshold %d is outside 0..%d", opts.ClaimCheckThreshold, maxMessageSize))
		case opts.ClaimCheckThreshold > 0:
			c.threshold = opts.ClaimCheckThreshold
		}
	}
	return c, nil
}

// OpenClient returns a Client sending to the queue named queue in acct,
// with claim-check blobs in the container "<queue>-claims" (the
// container an [OpenWorker] of the queue reads by default).
// A queue name over 56 characters is refused (the "-claims" suffix would
// make the container's name too long): use [NewClient] with a container
// of another name. Refusals are *tablekit.ValidationError with Op
// "archive.OpenClient".
func OpenClient(acct *tablekit.Account, queue string, opts *ClientOptions) (*Client, error) {
	const op = "archive.OpenClient"
	if acct == nil || acct.Queues() == nil || acct.Blobs() == nil {
		return nil, invalid(op, "acct", "the account is nil or zero: use tablekit.Open")
	}
	if err := names.CheckQueue(queue); err != nil {
		return nil, withOp(op, err)
	}
	claims, err := suffixedName(op, queue, claimsSuffix, "claim-check container", "call NewClient with a container of another name")
	if err != nil {
		return nil, err
	}
	return newClient(op, acct.Queues().NewQueueClient(queue), acct.Blobs().ServiceClient().NewContainerClient(claims), opts)
}

// Name returns the name of the queue the client sends to.
func (c *Client) Name() string {
	if c == nil {
		return ""
	}
	return c.name
}

// ContainerName returns the name of the claim-check container, "" if the
// Client has none.
func (c *Client) ContainerName() string {
	if c == nil {
		return ""
	}
	return c.containerName
}

// check refuses a nil or zero Client.
func (c *Client) check(op string) error {
	if c == nil || c.queue == nil {
		return invalid(op, "", "the Client is nil or zero: use archive.OpenClient")
	}
	return nil
}

// Enqueue sends one message of the given kind with payload (marshalled to
// JSON; a json.RawMessage or []byte holding JSON is sent as is). It
// returns the queue's message ID.
//
// When the message would exceed the claim-check threshold, the payload is
// written to a new blob first and the message carries the blob's name.
//
// The queue request is tried as ClientOptions.Retry says, not with the
// SDK's retries: Enqueue must know whether a failed try may have stored
// the message. A try that ends without saying so (no answer, a timeout,
// 408, 500, 502, 504) may have: Enqueue tries again, and if no later try
// succeeds its error matches tablekit.ErrOutcomeUnknown (the message may
// be in the queue). Any other error means that no message was stored.
// Tries after one that may have stored the message can store it twice;
// handlers are idempotent anyway. A claim-check message is sent again
// with a new blob, so two messages never share a blob (the first one
// handled deletes it, and the other could then never be handled). A
// blob that no stored message can name is deleted (best effort); a blob
// of a try that may have stored its message is kept, so a retried or
// failed Enqueue can leave an orphan blob (see the package doc,
// "Claim-check blobs"), never a message without its payload.
func (c *Client) Enqueue(ctx context.Context, kind string, payload any, opts *EnqueueOptions) (string, error) {
	const op = "archive.Client.Enqueue"
	if err := c.check(op); err != nil {
		return "", err
	}
	if kind == "" {
		return "", invalid(op, "kind", "kind is empty")
	}
	raw, err := marshalPayload(payload)
	if err != nil {
		return "", invalid(op, "payload", fmt.Sprintf("kind %q: marshalling the payload to JSON: %v", kind, err))
	}
	return c.send(ctx, op, &envelope{Kind: kind, Payload: raw}, opts)
}

// Requeue sends a message read back from the poison queue to the work
// queue again (after the cause of its failure was fixed), with its original
// kind and payload, or its original text for a foreign message. A
// claim-check blob is reused, not copied, so a Requeue that fails with an
// error matching tablekit.ErrOutcomeUnknown, or whose tries stored the
// message twice, leaves messages that share the blob: the first one
// handled deletes it and the others fail until they are poisoned again.
// It returns the new message ID; deleting the poison message is the
// caller's part.
func (c *Client) Requeue(ctx context.Context, p Poisoned, opts *EnqueueOptions) (string, error) {
	const op = "archive.Client.Requeue"
	if err := c.check(op); err != nil {
		return "", err
	}
	switch {
	case p.Kind != "":
		return c.send(ctx, op, &envelope{Kind: p.Kind, Payload: p.Payload, Blob: p.Blob}, opts)
	case p.Text != "":
		return c.deliver(ctx, op, p.Text, nil, opts)
	}
	return "", invalid(op, "", "the poison record holds no message")
}

// DiscardPoisoned deletes the claim-check blob of a poison record, if it
// has one (a missing blob is not an error), when the message is given up
// for good: one storage transaction, none without a blob. Deleting the
// poison message is the caller's part.
func (c *Client) DiscardPoisoned(ctx context.Context, p Poisoned) error {
	const op = "archive.Client.DiscardPoisoned"
	if err := c.check(op); err != nil {
		return err
	}
	if p.Blob == "" {
		return nil
	}
	if c.container == nil {
		return invalid(op, "", "the Client has no claim-check container")
	}
	_, err := DeleteBlobIfExists(ctx, c.container, p.Blob)
	return codec.WithOp(op, err)
}

// send enqueues env, moving its payload to a claim-check blob when the
// message would be too large.
func (c *Client) send(ctx context.Context, op string, env *envelope, opts *EnqueueOptions) (string, error) {
	text, err := encodeEnvelope(env)
	if err != nil {
		return "", err
	}
	return c.deliver(ctx, op, text, env, opts)
}

// deliver enqueues text, the encoding of env (nil for a foreign message's
// text), moving env's payload to a claim-check blob when text is too
// large. It tries the queue request once per attempt of c.retry (see
// Enqueue).
func (c *Client) deliver(ctx context.Context, op, text string, env *envelope, opts *EnqueueOptions) (id string, err error) {
	claim := env != nil && len(text) > c.threshold
	if claim && c.container == nil {
		return "", &tablekit.ValidationError{Op: op, Entity: c.name, Property: "payload", Detail: "the message is too large for the queue and the Client has no claim-check container", Limit: fmt.Sprintf("<= %d bytes of message text without a claim-check container", c.threshold), Size: len(text), Err: tablekit.ErrTooLarge}
	}
	var (
		blob        string // a claim-check blob that no stored message can name yet
		maybeStored bool   // an attempt ended without saying whether it stored the message
	)
	defer func() {
		if blob != "" {
			_, _ = DeleteBlobIfExists(context.WithoutCancel(ctx), c.container, blob)
		}
	}()
	// The SDK's retries are off for the queue request: they cannot tell
	// whether a try whose answer was lost stored the message.
	once := policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1})
	for range timing.Policy(c.retry).Attempts(ctx) {
		if claim && blob == "" {
			name := claimPrefix + randomName() + ".json"
			if err = putClaimBlob(ctx, op, c.container, name, env.Payload); err != nil {
				// No message names it; the SDK retried the upload already.
				_, _ = DeleteBlobIfExists(context.WithoutCancel(ctx), c.container, name)
				break
			}
			blob = name
			if text, err = encodeEnvelope(&envelope{Kind: env.Kind, Blob: blob}); err == nil && len(text) > c.threshold {
				err = &tablekit.ValidationError{Op: op, Entity: c.name, Property: "kind", Detail: "the claim-check message (kind and blob name) is too large", Limit: fmt.Sprintf("<= %d bytes of message text", c.threshold), Size: len(text), Err: tablekit.ErrTooLarge}
			}
			if err != nil {
				break
			}
		}
		if id, err = c.enqueueText(once, op, text, opts); err == nil {
			blob = ""
			return id, nil
		}
		if !refused(err) {
			// The message may be stored, naming the blob: keep the blob,
			// and send the payload again in a new one.
			maybeStored = true
			blob = ""
		}
		if !retryable(err) {
			break
		}
	}
	if err == nil {
		err = ctx.Err() // ended before the first attempt
	}
	if maybeStored {
		return "", fmt.Errorf("%s: a try may have stored the message: %w: %w", opname.Prefix(op), tablekit.ErrOutcomeUnknown, err)
	}
	return "", err
}

// refused reports whether the service answered a request by refusing it,
// which says that nothing was stored: a 4xx other than 408, or 503
// ServerBusy.
func refused(err error) bool {
	var se *tablekit.ServiceError
	if !errors.As(err, &se) {
		return false
	}
	return se.StatusCode >= 400 && se.StatusCode < 500 && se.StatusCode != http.StatusRequestTimeout ||
		se.StatusCode == http.StatusServiceUnavailable
}

// retryable reports whether a failed queue request is worth another try:
// no answer (but not the end of the caller's context), or the statuses
// the SDK retries (408, 429, 500, 502, 503, 504).
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var se *tablekit.ServiceError
	if !errors.As(err, &se) {
		var ve *tablekit.ValidationError
		return !errors.As(err, &ve)
	}
	switch se.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// enqueueText puts text in the queue.
func (c *Client) enqueueText(ctx context.Context, op, text string, opts *EnqueueOptions) (string, error) {
	eo := &azqueue.EnqueueMessageOptions{}
	if opts != nil {
		if opts.Delay > 0 {
			eo.VisibilityTimeout = seconds(opts.Delay)
		}
		switch {
		case opts.TimeToLive < 0:
			eo.TimeToLive = ptr(int32(-1))
		case opts.TimeToLive > 0:
			eo.TimeToLive = seconds(opts.TimeToLive)
		}
	}
	resp, err := c.queue.EnqueueMessage(ctx, text, eo)
	if err != nil {
		return "", wire.Wrap(op, "", "", "", err)
	}
	if len(resp.Messages) == 0 || resp.Messages[0].MessageID == nil {
		return "", fmt.Errorf("%s: the service returned no message ID", opname.Prefix(op))
	}
	return *resp.Messages[0].MessageID, nil
}

// marshalPayload returns payload as JSON.
func marshalPayload(payload any) (json.RawMessage, error) {
	switch p := payload.(type) {
	case json.RawMessage:
		if !json.Valid(p) {
			return nil, errors.New("json.RawMessage is not valid JSON")
		}
		return p, nil
	case []byte:
		if !json.Valid(p) {
			return nil, errors.New("[]byte payload is not valid JSON")
		}
		return p, nil
	}
	return json.Marshal(payload)
}

// randomName returns 32 random hex digits.
func randomName() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// seconds returns d as whole seconds, rounded up, for the queue API.
func seconds(d time.Duration) *int32 {
	s := (d + time.Second - 1) / time.Second
	if s > 7*24*3600 {
		s = 7 * 24 * 3600
	}
	return ptr(int32(s))
}

func ptr[T any](v T) *T { return &v }
