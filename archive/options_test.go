package archive_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
)

func TestNewWorkerRefusesBadOptions(t *testing.T) {
	q, err := azqueue.NewQueueClientWithNoCredential("http://127.0.0.1:1/acct/work", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := azqueue.NewQueueClientWithNoCredential("http://127.0.0.1:1/acct/work-poison", nil)
	h := archive.NewMux()
	for name, o := range map[string]*archive.WorkerOptions{
		"nil options (no poison queue)": nil,
		"negative concurrency":          {PoisonQueue: p, Concurrency: -1},
		"batch 33":                      {PoisonQueue: p, BatchSize: 33},
		"negative visibility":           {PoisonQueue: p, VisibilityTimeout: -time.Second},
		"visibility over 7 days":        {PoisonQueue: p, VisibilityTimeout: 8 * 24 * time.Hour},
		"negative max attempts":         {PoisonQueue: p, Retry: tablekit.RetryPolicy{MaxAttempts: -1}},
		"negative retry delay":          {PoisonQueue: p, Retry: tablekit.RetryPolicy{BaseDelay: -1}},
		"poison queue is the queue":     {PoisonQueue: q},
		"negative drain":                {PoisonQueue: p, DrainTimeout: -1},
	} {
		if _, err := archive.NewWorker(q, h, o); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := archive.NewWorker(nil, h, &archive.WorkerOptions{PoisonQueue: p}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("nil queue: %v", err)
	}
	if _, err := archive.NewWorker(q, nil, &archive.WorkerOptions{PoisonQueue: p}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("nil handler: %v", err)
	}
	if _, err := archive.NewWorker(q, h, &archive.WorkerOptions{PoisonQueue: p}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestClientRefusesBadInput(t *testing.T) {
	q, _ := azqueue.NewQueueClientWithNoCredential("http://127.0.0.1:1/acct/work", nil)
	if _, err := archive.NewClient(q, nil, &archive.ClientOptions{ClaimCheckThreshold: archive.MaxMessageSize + 1}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("threshold over 64 KiB: %v", err)
	}
	if _, err := archive.NewClient(q, nil, &archive.ClientOptions{Retry: tablekit.RetryPolicy{MaxAttempts: -1}}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("negative Retry.MaxAttempts: %v", err)
	}
	c, err := archive.NewClient(q, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, "", 1, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("empty kind: %v", err)
	}
	if _, err := c.Enqueue(ctx, "k", func() {}, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("unmarshallable payload: %v", err)
	}
	if _, err := c.Enqueue(ctx, "k", []byte("{not json"), nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("invalid raw JSON: %v", err)
	}
}

func TestParsePoisonRefusesOtherText(t *testing.T) {
	for _, s := range []string{"", "hello", "eyJraW5kIjoieCJ9"} { // the last: {"kind":"x"} without poison
		if _, err := archive.ParsePoison(s); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("ParsePoison(%q): %v", s, err)
		}
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("bad")
	err := archive.Permanent(base)
	if !errors.Is(err, base) || !errors.Is(err, archive.ErrPermanent) || err.Error() != "bad" {
		t.Errorf("Permanent: %v", err)
	}
	if archive.Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
}
