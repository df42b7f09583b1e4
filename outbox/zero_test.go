package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

func isPermanent(err error) bool { return errors.Is(err, archive.ErrPermanent) }

// TestZeroValuesNeverPanic: the zero and nil Publisher refuse Handle with
// an error matching tablekit.ErrInvalidInput naming NewPublisher; the
// constructors refuse nil arguments so; the zero Message decodes to a
// permanent error.
func TestZeroValuesNeverPanic(t *testing.T) {
	ctx := context.Background()
	c := feed.Change{Stream: stream.ID{PartitionKey: "p"}, Version: 1}
	for _, p := range []*outbox.Publisher{{}, nil} {
		if err := p.Handle(ctx, c); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "outbox.NewPublisher") {
			t.Errorf("zero Publisher: %v", err)
		}
	}
	if _, err := outbox.NewPublisher(nil, nil, "", nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("NewPublisher(nil, nil): %v", err)
	}
	if _, err := outbox.NewHandler(nil, nil, nil, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("NewHandler(nil, nil, nil): %v", err)
	}
	var s struct{ A int }
	if err := (outbox.Message{}).Decode(&s); !isPermanent(err) {
		t.Errorf("zero Message.Decode: %v, want a permanent error", err)
	}
}
