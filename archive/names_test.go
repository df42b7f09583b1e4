package archive_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/opname"
)

// offlineAccount is an Account of Azurite's well-known development
// storage; nothing in these tests contacts it.
func offlineAccount(t *testing.T) *tablekit.Account {
	t.Helper()
	acct, err := tablekit.Open("UseDevelopmentStorage=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// Every wrapper names its queue and container; a default name that its
// suffix would make too long is refused up front, saying so.
func TestNames(t *testing.T) {
	acct := offlineAccount(t)
	mux := new(archive.Mux)
	q56, q57 := strings.Repeat("q", 56), strings.Repeat("q", 57)

	w, err := archive.OpenWorker(acct, q56, mux, nil)
	if err != nil {
		t.Fatalf("OpenWorker with a 56-character queue: %v", err)
	}
	if w.Name() != q56 || w.PoisonQueueName() != q56+"-poison" || w.ContainerName() != q56+"-claims" {
		t.Errorf("worker names %q, %q, %q", w.Name(), w.PoisonQueueName(), w.ContainerName())
	}
	c, err := archive.OpenClient(acct, q56, nil)
	if err != nil {
		t.Fatalf("OpenClient with a 56-character queue: %v", err)
	}
	if c.Name() != q56 || c.ContainerName() != q56+"-claims" {
		t.Errorf("client names %q, %q", c.Name(), c.ContainerName())
	}
	if c, err := archive.NewClient(acct.Queues().NewQueueClient("work"), nil, nil); err != nil || c.ContainerName() != "" || c.Name() != "work" {
		t.Errorf("NewClient without a container: %v, names %q %q", err, c.Name(), c.ContainerName())
	}

	tooLong := func(what string, err error, op, suffix string) {
		t.Helper()
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || ve.Op != op || !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Fatalf("%s: %v, want a *tablekit.ValidationError of %s matching ErrInvalidKey", what, err, op)
		}
		msg := err.Error()
		for _, want := range []string{opname.Prefix(op) + ": ", q57 + suffix, `the "` + suffix + `" suffix makes it longer than the 63 characters`, "at most 56 characters"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q does not say %q", what, msg, want)
			}
		}
	}
	_, err = archive.OpenWorker(acct, q57, mux, nil)
	t.Log(err)
	tooLong("OpenWorker, 57 characters", err, "archive.OpenWorker", "-poison")
	_, err = archive.OpenWorker(acct, q57, mux, &archive.WorkerOptions{PoisonQueue: "poison"})
	tooLong("OpenWorker, 57 characters with a poison queue", err, "archive.OpenWorker", "-claims")
	_, err = archive.OpenClient(acct, q57, nil)
	tooLong("OpenClient, 57 characters", err, "archive.OpenClient", "-claims")

	w, err = archive.OpenWorker(acct, q57, mux, &archive.WorkerOptions{PoisonQueue: "poison", Container: "claims"})
	if err != nil {
		t.Fatalf("OpenWorker, 57 characters with both named: %v", err)
	}
	if w.Name() != q57 || w.PoisonQueueName() != "poison" || w.ContainerName() != "claims" {
		t.Errorf("worker names %q, %q, %q", w.Name(), w.PoisonQueueName(), w.ContainerName())
	}
}

// Every refusal is a *tablekit.ValidationError that names the operation
// which refused.
func TestRefusalsNameTheOperation(t *testing.T) {
	ctx := context.Background()
	acct := offlineAccount(t)
	q := acct.Queues().NewQueueClient("work")
	h := new(archive.Mux)
	c, err := archive.NewClient(q, nil, &archive.ClientOptions{ClaimCheckThreshold: 100})
	if err != nil {
		t.Fatal(err)
	}
	tooBig := strings.Repeat("x", 200)
	for _, tc := range []struct {
		op, property string
		err          error
	}{
		{"archive.OpenWorker", "handler", second(archive.OpenWorker(acct, "work", nil, nil))},
		{"archive.OpenWorker", "PoisonQueue", second(archive.OpenWorker(acct, "work", h, &archive.WorkerOptions{PoisonQueue: "work"}))},
		{"archive.OpenWorker", "PoisonQueue", second(archive.OpenWorker(acct, "work", h, &archive.WorkerOptions{PoisonQueue: "Bad_Queue"}))},
		{"archive.OpenWorker", "Container", second(archive.OpenWorker(acct, "work", h, &archive.WorkerOptions{Container: "Bad_Container"}))},
		{"archive.OpenWorker", "Concurrency", second(archive.OpenWorker(acct, "work", h, &archive.WorkerOptions{Concurrency: -1}))},
		{"archive.OpenWorker", "Retry", second(archive.OpenWorker(acct, "work", h, &archive.WorkerOptions{Retry: tablekit.RetryPolicy{MaxAttempts: -1}}))},
		{"archive.OpenWorker", "PollInterval", second(archive.OpenWorker(acct, "work", h, &archive.WorkerOptions{PollInterval: -1}))},
		{"archive.OpenWorker", "acct", second(archive.OpenWorker(nil, "work", h, nil))},
		{"archive.OpenWorker", "acct", second(archive.OpenWorker(&tablekit.Account{}, "work", h, nil))},
		{"archive.OpenWorker", "", second(archive.OpenWorker(acct, "Bad_Queue", h, nil))},
		{"archive.NewClient", "queue", second(archive.NewClient(nil, nil, nil))},
		{"archive.NewClient", "ClaimCheckThreshold", second(archive.NewClient(q, nil, &archive.ClientOptions{ClaimCheckThreshold: -1}))},
		{"archive.OpenClient", "acct", second(archive.OpenClient(nil, "work", nil))},
		{"archive.OpenClient", "", second(archive.OpenClient(acct, "x", nil))},
		{"archive.Client.Enqueue", "kind", second(c.Enqueue(ctx, "", 1, nil))},
		{"archive.Client.Enqueue", "payload", second(c.Enqueue(ctx, "k", func() {}, nil))},
		{"archive.Client.Enqueue", "payload", second(c.Enqueue(ctx, "k", tooBig, nil))},
		{"archive.Client.Requeue", "", second(c.Requeue(ctx, archive.Poisoned{}, nil))},
		{"archive.Client.DiscardPoisoned", "", c.DiscardPoisoned(ctx, archive.Poisoned{Blob: "claims/x.json"})},
		{"archive.HandleFunc", "", archive.HandleFunc(nil, "k", func(context.Context, struct{}) error { return nil })},
		{"archive.HandleFunc", "kind", archive.HandleFunc(h, "", func(context.Context, struct{}) error { return nil })},
		{"archive.Mux.Register", "handler", h.Register("k", nil)},
		{"archive.ParsePoison", "text", second(archive.ParsePoison("not a poison record"))},
		{"archive.Mover.Move", "", (&archive.Mover[Employee]{}).Move(ctx, "a", "b")},
		{"archive.Mover.Handle", "", (&archive.Mover[Employee]{}).Handle(ctx, archive.MoveRequest{})},
	} {
		var ve *tablekit.ValidationError
		if !errors.As(tc.err, &ve) {
			t.Errorf("%s: %v (%T), want a *tablekit.ValidationError", tc.op, tc.err, tc.err)
			continue
		}
		if ve.Op != tc.op || ve.Property != tc.property {
			t.Errorf("%v: Op %q, Property %q; want %q, %q", tc.err, ve.Op, ve.Property, tc.op, tc.property)
		}
		if msg := tc.err.Error(); !strings.HasPrefix(msg, opname.Prefix(tc.op)+": ") || strings.Contains(msg, "invalid entity") {
			t.Errorf("%s: message %q", tc.op, msg)
		}
	}
	if _, err := archive.OpenWorker(acct, "work", nil, nil); err == nil || err.Error() != `archive: OpenWorker: invalid property "handler": handler is nil` {
		t.Errorf("OpenWorker(..., nil, nil): %v", err)
	}
	if _, err := c.Enqueue(ctx, "k", tooBig, nil); !errors.Is(err, tablekit.ErrTooLarge) {
		t.Errorf("a payload too large without a claim-check container: %v, want ErrTooLarge", err)
	}
	var _ *azqueue.QueueClient = q
}

func second[T any](_ T, err error) error { return err }
