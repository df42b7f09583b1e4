package azurite

import (
	"context"
	"testing"
	"time"
)

// StartForTest starts an Azurite for tb and stops it in tb.Cleanup. It
// fails tb (tb.Fatal) if Azurite cannot be installed or started. The first
// use on a machine installs Azurite with npm, which can take a minute.
func StartForTest(tb testing.TB, opts *Options) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv, err := Start(ctx, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return srv
}
