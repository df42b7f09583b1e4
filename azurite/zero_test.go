package azurite_test

import (
	"strings"
	"testing"

	"github.com/tablekit/tablekit/azurite"
)

// TestZeroValuesNeverPanic calls every method of a zero and a nil Server
// and Front (which only Start and NewFront make): nothing panics, Stop and
// Close say what is wrong, and the others return empty values.
func TestZeroValuesNeverPanic(t *testing.T) {
	for _, s := range []*azurite.Server{{}, nil} {
		if err := s.Stop(); err == nil || !strings.Contains(err.Error(), "azurite: Server.Stop: invalid input: the value was not made by azurite.Start") {
			t.Errorf("%#v.Stop() = %v", s, err)
		}
		if s.ConnectionString() != "" || s.Endpoints() != (azurite.Endpoints{}) || s.Direct() != (azurite.Endpoints{}) || s.Front() != nil || s.Output() != "" {
			t.Errorf("%#v: a zero Server gives values", s)
		}
	}
	for _, f := range []*azurite.Front{{}, nil} {
		if err := f.Close(); err == nil || !strings.Contains(err.Error(), "azurite: Front.Close: invalid input: the value was not made by azurite.NewFront") {
			t.Errorf("%#v.Close() = %v", f, err)
		}
		if f.ConnectionString() != "" || f.Endpoints() != (azurite.Endpoints{}) || f.Stats() != (azurite.FrontStats{}) || f.String() == "" {
			t.Errorf("%#v: a zero Front gives values", f)
		}
	}
	var e azurite.Endpoints
	if cs := e.ConnectionString(azurite.AccountName, azurite.AccountKey); !strings.Contains(cs, "AccountName=devstoreaccount1") {
		t.Errorf("zero Endpoints: %q", cs)
	}
}

// TestErrorsNameTheOperation: every error reads "azurite: <Op>: ...".
func TestErrorsNameTheOperation(t *testing.T) {
	_, err := azurite.NewFront(t.Context(), azurite.Endpoints{Table: "ftp://x"}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "azurite: NewFront: front target") {
		t.Errorf("NewFront: %v", err)
	}
	_, err = azurite.ParseFrontSpec("loose")
	if err == nil || !strings.HasPrefix(err.Error(), "azurite: ParseFrontSpec: front spec") {
		t.Errorf("ParseFrontSpec: %v", err)
	}
}
