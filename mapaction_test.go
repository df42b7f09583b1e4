package tablekit_test

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

// TestMapAction: a mapped action keeps its verb and ETag and carries f's
// value; f's error comes back as is; the zero Action maps to the zero
// Action without calling f.
func TestMapAction(t *testing.T) {
	double := func(n int) (int, error) { return 2 * n, nil }
	etag := azcore.ETag(`W/"1"`)
	for _, a := range []tablekit.Action[int]{
		tablekit.InsertAction(1), tablekit.UpsertAction(2), tablekit.UpdateAction(3, etag),
		tablekit.MergeAction(4, azcore.ETagAny), tablekit.DeleteAction(5, etag),
	} {
		m, err := tablekit.MapAction(a, double)
		if err != nil || m.Verb() != a.Verb() || m.ETag() != a.ETag() || m.Value() != 2*a.Value() {
			t.Errorf("MapAction(%s %d %q): %s %d %q, %v", a.Verb(), a.Value(), a.ETag(), m.Verb(), m.Value(), m.ETag(), err)
		}
	}
	boom := errors.New("boom")
	if _, err := tablekit.MapAction(tablekit.InsertAction(1), func(int) (string, error) { return "", boom }); err != boom {
		t.Errorf("f's error: %v", err)
	}
	called := false
	m, err := tablekit.MapAction(tablekit.Action[int]{}, func(int) (int, error) { called = true; return 0, nil })
	if err != nil || called || m.Verb() != "" {
		t.Errorf("zero Action: %q, %v, f called %v", m.Verb(), err, called)
	}
}
