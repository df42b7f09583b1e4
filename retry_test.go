package tablekit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/internal/timing"
)

// A RetryPolicy with a negative field is refused where it is given, naming
// the operation and the option.
func TestRetryPolicyValidate(t *testing.T) {
	acct := testenv.Account(t, nil)
	for _, p := range []tablekit.RetryPolicy{{MaxAttempts: -1}, {BaseDelay: -time.Second}, {MaxDelay: -time.Second}} {
		_, err := tablekit.OpenTable[tablekit.Entity](acct, "Items", &tablekit.TableOptions{Retry: p})
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || ve.Op != "OpenTable" || ve.Property != "Retry" || !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("OpenTable with Retry %+v: %v", p, err)
		}
		err = timing.Policy(p).Validate("index.NewIntra")
		if !errors.As(err, &ve) || ve.Op != "index.NewIntra" || !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("ValidateRetry(%+v) = %v", p, err)
		}
	}
	if err := timing.Policy(tablekit.RetryPolicy{}).Validate("x"); err != nil {
		t.Errorf("zero policy: %v", err)
	}
}
