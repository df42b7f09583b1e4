package opname

import (
	"errors"
	"testing"
)

// opError stands for the root's error types in this package's tests.
type opError struct{ op string }

func (e *opError) Error() string { return Prefix(e.op) + ": failed" }

func TestSetNamesOnlyErrorsWithoutAnOperation(t *testing.T) {
	old := namer
	defer func() { namer = old }()
	Register(func(op string, err error) {
		var oe *opError
		if errors.As(err, &oe) && oe.op == "" {
			oe.op = op
		}
	})
	if Set("X", nil) != nil {
		t.Fatal("Set of nil is not nil")
	}
	bare := &opError{}
	wrapped := errors.Join(errors.New("context"), bare)
	if err := Set("patterns.Wide.Upsert", wrapped); err != wrapped || bare.op != "patterns.Wide.Upsert" {
		t.Errorf("a wrapped error without an operation: %q, %v", bare.op, err)
	}
	if got := bare.Error(); got != "patterns: Wide.Upsert: failed" {
		t.Errorf("message %q", got)
	}
	named := &opError{op: "Where"}
	if Set("index.Intra.By", named); named.op != "Where" {
		t.Errorf("an operation's own name was replaced: %q", named.op)
	}
}

func TestPrefix(t *testing.T) {
	for op, want := range map[string]string{
		"":                       "tablekit",
		"Get":                    "tablekit: Get",
		"Table.Query":            "tablekit: Table.Query",
		"patterns.Wide.Merge":    "patterns: Wide.Merge",
		"index.NewIntra":         "index: NewIntra",
		"archive.Client.Enqueue": "archive: Client.Enqueue",
	} {
		if got := Prefix(op); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", op, got, want)
		}
	}
}
