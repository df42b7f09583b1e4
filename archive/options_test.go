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

func TestOpenWorkerRefusesBadOptions(t *testing.T) {
	acct := offlineAccount(t)
	h := new(archive.Mux)
	for name, o := range map[string]*archive.WorkerOptions{
		"negative concurrency":      {Concurrency: -1},
		"negative visibility":       {VisibilityTimeout: -time.Second},
		"visibility over 7 days":    {VisibilityTimeout: 8 * 24 * time.Hour},
		"negative max attempts":     {Retry: tablekit.RetryPolicy{MaxAttempts: -1}},
		"negative retry delay":      {Retry: tablekit.RetryPolicy{BaseDelay: -1}},
		"poison queue is the queue": {PoisonQueue: "work"},
		"negative poll interval":    {PollInterval: -1},
		"negative operation":        {OperationTimeout: -1},
		"negative drain":            {DrainTimeout: -1},
	} {
		if _, err := archive.OpenWorker(acct, "work", h, o); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := archive.OpenWorker(acct, "work", nil, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("nil handler: %v", err)
	}
	if _, err := archive.OpenWorker(acct, "work", h, nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestClientRefusesBadInput(t *testing.T) {
	q, _ := azqueue.NewQueueClientWithNoCredential("http://127.0.0.1:1/acct/work", nil)
	if _, err := archive.NewClient(q, nil, &archive.ClientOptions{ClaimCheckThreshold: 64*1024 + 1}); !errors.Is(err, tablekit.ErrInvalidInput) {
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
