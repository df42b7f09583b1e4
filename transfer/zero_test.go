package transfer_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/transfer"
)

// TestZeroValues calls every exported function and method of the package
// with zero values and nils: each refuses with an error matching
// tablekit.ErrInvalidInput (or returns a zero result), none panics.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	var zt *tablekit.Table[tablekit.Entity]
	invalid := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", what, err)
		}
	}
	_, err := transfer.Export(ctx, zt, io.Discard, nil)
	invalid("Export", err)
	_, err = transfer.Export(ctx, &tablekit.Table[tablekit.Entity]{}, io.Discard, &transfer.Options{})
	invalid("Export of a zero Table", err)
	_, err = transfer.Count(ctx, zt, nil)
	invalid("Count", err)
	_, err = transfer.Copy(ctx, zt, zt, transfer.Insert, nil)
	invalid("Copy", err)
	_, err = transfer.Purge(ctx, zt, nil)
	invalid("Purge", err)
	_, err = transfer.Import(ctx, zt, nil, transfer.Insert, nil)
	invalid("Import", err)
	_, err = transfer.NewTableCheckpoint(zt, "job")
	invalid("NewTableCheckpoint", err)
	_, _, err = transfer.ExportResumeOffset(ctx, nil)
	invalid("ExportResumeOffset", err)
	_, err = transfer.AppendEntity(nil, nil)
	invalid("AppendEntity", err)

	var r transfer.Reader
	if _, err := r.Next(); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero Reader.Next: %v, want ErrInvalidInput", err)
	}
	if h := r.Header(); h != (transfer.Header{}) {
		t.Errorf("zero Reader.Header: %+v", h)
	}
	var nr *transfer.Reader
	if _, err := nr.Next(); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("nil Reader.Next: %v, want ErrInvalidInput", err)
	}
	_, err = transfer.NewReader(nil)
	invalid("NewReader(nil)", err)

	var ee transfer.EntityError
	if ee.Error() == "" || ee.Unwrap() != nil {
		t.Errorf("zero EntityError: %q, %v", ee.Error(), ee.Unwrap())
	}
	if s := transfer.Mode(9).String(); s != "Mode(9)" {
		t.Errorf("Mode(9).String() = %q", s)
	}
}
