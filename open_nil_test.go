package tablekit

import (
	"strings"
	"testing"
)

// TestOpenTableNilAccount: OpenTable of a nil Account fails saying so (the
// codec's own plan errors are internal/codec's tests).
func TestOpenTableNilAccount(t *testing.T) {
	type noKeys struct{ A string }
	_, err := OpenTable[noKeys](nil, "Items", nil)
	if err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("got %v, want it to mention %q", err, "nil")
	}
}
