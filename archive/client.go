package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
)

// ClaimContainerName returns the default claim-check container of a work
// queue: "<queue>-claims". It is only a valid container name when the
// queue's name has at most 56 characters.
func ClaimContainerName(queue string) string { return queue + "-claims" }

// PoisonQueueName returns the default poison queue of a work queue:
// "<queue>-poison". It is only a valid queue name when the queue's name
// has at most 56 characters.
func PoisonQueueName(queue string) string { return queue + "-poison" }

// ClientOptions configures a [Client]. A nil *ClientOptions means the
// defaults.
type ClientOptions struct {
	// ClaimCheckThreshold is the largest message text (after base64) sent
	// in the queue; a larger envelope's payload goes to a blob and the
	// message carries the blob's name. 0 means 60 KiB, which leaves room
	// below the queue's 64 KiB limit for the error a failed attempt
	// records in the message. Values above 64 KiB are refused.
	ClaimCheckThreshold int
	// BlobPrefix is prepended to claim-check blob names; "" means
	// "claims/".
	BlobPrefix string
}

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
// blob container (claim check). A Client is safe for concurrent use.
type Client struct {
	queue     *azqueue.QueueClient
	container *container.Client
	threshold int
	prefix    string
}

// NewClient returns a Client sending to queue. claims is the container for
// claim-check blobs, created on first use; nil means payloads over the
// threshold are refused with an error matching tablekit.ErrTooLarge.
func NewClient(queue *azqueue.QueueClient, claims *container.Client, opts *ClientOptions) (*Client, error) {
	if queue == nil {
		return nil, invalid("archive.NewClient", "queue is nil")
	}
	c := &Client{queue: queue, container: claims, threshold: 60 * 1024, prefix: "claims/"}
	if opts != nil {
		switch {
		case opts.ClaimCheckThreshold < 0 || opts.ClaimCheckThreshold > MaxMessageSize:
			return nil, invalid("archive.NewClient", fmt.Sprintf("ClaimCheckThreshold %d is outside 0..%d", opts.ClaimCheckThreshold, MaxMessageSize))
		case opts.ClaimCheckThreshold > 0:
			c.threshold = opts.ClaimCheckThreshold
		}
		if opts.BlobPrefix != "" {
			c.prefix = opts.BlobPrefix
		}
	}
	return c, nil
}

// OpenClient returns a Client sending to the queue named queue in acct,
// with claim-check blobs in the container [ClaimContainerName](queue).
func OpenClient(acct *tablekit.Account, queue string, opts *ClientOptions) (*Client, error) {
	if acct == nil {
		return nil, invalid("archive.OpenClient", "account is nil")
	}
	if err := tablekit.ValidateQueueName(queue); err != nil {
		return nil, err
	}
	claims := ClaimContainerName(queue)
	if err := tablekit.ValidateContainerName(claims); err != nil {
		return nil, err
	}
	return NewClient(acct.Queue(queue), acct.Container(claims), opts)
}

// Queue returns the work queue the Client sends to.
func (c *Client) Queue() *azqueue.QueueClient { return c.queue }

// Container returns the claim-check container (nil if none).
func (c *Client) Container() *container.Client { return c.container }

// Enqueue sends one message of the given kind with payload (marshalled to
// JSON; a json.RawMessage or []byte holding JSON is sent as is). It
// returns the queue's message ID. When the message would exceed the
// claim-check threshold the payload is written to a blob first; if the
// enqueue then fails, the blob is deleted again (best effort).
func (c *Client) Enqueue(ctx context.Context, kind string, payload any, opts *EnqueueOptions) (string, error) {
	if kind == "" {
		return "", invalid("archive.Enqueue", "kind is empty")
	}
	raw, err := marshalPayload(payload)
	if err != nil {
		return "", fmt.Errorf("archive: Enqueue %q: marshalling payload: %w: %w", kind, err, tablekit.ErrInvalidInput)
	}
	return c.send(ctx, &envelope{Kind: kind, Payload: raw}, opts)
}

// Requeue sends a message read back from the poison queue to the work
// queue again (after the cause of its failure was fixed), with its original
// kind and payload, or its original text for a foreign message. A
// claim-check blob is reused, not copied. It returns the new message ID;
// deleting the poison message is the caller's part.
func (c *Client) Requeue(ctx context.Context, p Poisoned, opts *EnqueueOptions) (string, error) {
	switch {
	case p.Kind != "":
		return c.send(ctx, &envelope{Kind: p.Kind, Payload: p.Payload, Blob: p.Blob}, opts)
	case p.Text != "":
		return c.enqueueText(ctx, p.Text, "", opts)
	}
	return "", invalid("archive.Requeue", "the poison record holds no message")
}

// DiscardPoisoned deletes the claim-check blob of a poison record, if it
// has one, when the message is given up for good. Deleting the poison
// message is the caller's part.
func (c *Client) DiscardPoisoned(ctx context.Context, p Poisoned) error {
	if p.Blob == "" {
		return nil
	}
	if c.container == nil {
		return invalid("archive.DiscardPoisoned", "the Client has no claim-check container")
	}
	return DeleteBlobIfExists(ctx, c.container, p.Blob)
}

// send enqueues env, moving its payload to a claim-check blob when the
// message would be too large.
func (c *Client) send(ctx context.Context, env *envelope, opts *EnqueueOptions) (string, error) {
	kind, raw := env.Kind, env.Payload
	text, err := encodeEnvelope(env)
	if err != nil {
		return "", err
	}
	var blob string
	if len(text) > c.threshold {
		if c.container == nil {
			return "", &tablekit.ValidationError{Entity: "queue message", Limit: fmt.Sprintf("<= %d bytes of message text without a claim-check container", c.threshold), Size: len(text), Err: tablekit.ErrTooLarge}
		}
		blob = c.prefix + randomName() + ".json"
		if err := putBlobCreate(ctx, c.container, blob, raw); err != nil {
			return "", err
		}
		env = &envelope{Kind: kind, Blob: blob}
		if text, err = encodeEnvelope(env); err != nil {
			return "", err
		}
		if len(text) > c.threshold {
			_ = DeleteBlobIfExists(context.WithoutCancel(ctx), c.container, blob)
			return "", &tablekit.ValidationError{Entity: "queue message", Property: "kind", Limit: fmt.Sprintf("<= %d bytes of message text", c.threshold), Size: len(text), Err: tablekit.ErrTooLarge}
		}
	}
	return c.enqueueText(ctx, text, blob, opts)
}

// enqueueText puts text in the queue; on failure it deletes the claim-check
// blob made for it (best effort).
func (c *Client) enqueueText(ctx context.Context, text, blob string, opts *EnqueueOptions) (string, error) {
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
		if blob != "" {
			_ = DeleteBlobIfExists(context.WithoutCancel(ctx), c.container, blob)
		}
		return "", tablekit.WrapError("Enqueue", err)
	}
	if len(resp.Messages) == 0 || resp.Messages[0].MessageID == nil {
		return "", errors.New("archive: Enqueue: the service returned no message ID")
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

// Name returns the name of the queue the client sends to.
func (c *Client) Name() string { return queueNameOf(c.queue) }
