package feed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
)

// TestRunStopsOnRefusedLease: a relay whose lease key the service refuses
// does not campaign forever, silently: coord.NewLease refuses the RowKey
// "relay/orders" itself, and Run, given a lease whose key passed the
// client's checks but is refused by the service (a Cosmos DB endpoint the
// Account does not know for one, and a RowKey over its 255 bytes), returns
// that error at once, although its context has no deadline.
func TestRunStopsOnRefusedLease(t *testing.T) {
	e := newEnv(t, nil)
	r, err := e.f.NewRelay([]feed.Subscription{{Name: "rec", Handle: newRecorder().handle}}, &feed.RelayOptions{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run := func(lease *coord.Lease) error {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- r.Run(ctx, lease) }()
		select {
		case err := <-errc:
			return err
		case <-time.After(time.Minute):
			cancel()
			<-errc
			t.Fatal("Run still campaigning after a minute")
			return nil
		}
	}

	lease, err := coord.NewLease(e.ft, "lease", "relay/orders", "me", nil)
	if err == nil {
		err = run(lease)
	}
	if !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("a relay on the lease relay/orders: %v, want ErrInvalidKey", err)
	}

	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 4}})
	open := func() *tablekit.Table[tablekit.Entity] {
		acct, err := tablekit.Open(srv.ConnectionString(), nil) // Cosmos DB, unknown to the Account until it answers
		if err != nil {
			t.Fatal(err)
		}
		lt, err := tablekit.OpenTable[tablekit.Entity](acct, "relayleases", nil)
		if err != nil {
			t.Fatal(err)
		}
		return lt
	}
	if err := open().CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A fresh Account has sent nothing: NewLease cannot tell the endpoint
	// is Cosmos DB, and the refusal comes once the relay runs.
	lt := open()
	lease, err = coord.NewLease(lt, "lease", strings.Repeat("r", 300), "me", &coord.LeaseOptions{Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(lease); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("a relay on a lease whose key the service refuses: %v, want its ErrInvalidKey", err)
	} else {
		t.Log(err)
	}
}
