package patterns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/opname"
)

// This file holds what several patterns share: the storage service's size
// formula, value comparison and conflict detection.

// Azure's entity size formula (internal/codec.EntitySize).
func keysSize(pk, rk string) int {
	return codec.EntitySize(tablekit.Entity{PartitionKey: pk, RowKey: rk})
}

// propertySize is the size of one custom property in Azure's formula.
func propertySize(name string, v any) int { return codec.PropertySize(name, v) }

// valueSize is the size of a property value in Azure's formula.
func valueSize(v any) int { return codec.PropertySize("", v) - 8 }

// jsonPropertySize bounds the bytes one property adds to an entity's JSON
// in a request body: `,"name":value` plus an `@odata.type` annotation.
func jsonPropertySize(name string, v any) int {
	n := 2*len(name) + 40 // name twice, quotes, colon, comma, annotation
	switch x := v.(type) {
	case string:
		n += jsonStringLen(x)
	case []byte:
		n += (len(x)+2)/3*4 + 2
	default:
		n += 40 // numbers, dates and GUIDs as text
	}
	return n
}

// jsonEntityOverhead bounds the JSON of an entity's keys and braces.
func jsonEntityOverhead(pk, rk string) int {
	return 40 + jsonStringLen(pk) + jsonStringLen(rk)
}

// jsonStringLen is the length of s as a JSON string, escapes included, as
// tablekit's codec writes it (at most; the codec never writes longer).
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// transactionBudget is the request-body budget of one entity group
// transaction, with the per-action framing tablekit accounts for.
const (
	transactionBudget = limits.TransactionBytes
	actionFraming     = 1024
)

// normalizeValue returns v in the Go type a decoded Entity holds, so that
// a value to write compares equal to the same value read back: int becomes
// int64 and any [16]byte type becomes tablekit.GUID. Other values are
// returned as they are.
func normalizeValue(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case string, []byte, bool, int32, int64, float64, time.Time, tablekit.GUID, nil:
		return v
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Array && rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
		var g tablekit.GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), rv)
		return g
	}
	return v
}

// valuesEqual reports whether two property values (normalized) are the
// same stored value, with the same EDM type.
func valuesEqual(a, b any) bool {
	a, b = normalizeValue(a), normalizeValue(b)
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		// Edm.DateTime keeps 100 ns: compare as stored.
		return ok && x.Truncate(100).Equal(y.Truncate(100))
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	}
	return a == b
}

// isConflict reports whether err says that a concurrent writer changed what
// an optimistic write read: a stale ETag, an entity created or deleted in
// between.
func isConflict(err error) bool {
	return errors.Is(err, tablekit.ErrPreconditionFailed) ||
		errors.Is(err, tablekit.ErrAlreadyExists) ||
		errors.Is(err, tablekit.ErrNotFound)
}

// forEach runs fn(ctx, i) for every i in 0..n-1, at most limit at once, and
// returns the first error; the first error cancels the ctx the others get.
func forEach(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// withOp names op, the exported operation that failed ("patterns.Wide.Get"),
// in err, so that its message starts "patterns: Wide.Get: ": a
// *tablekit.ValidationError or *tablekit.DecodeError that names no
// operation gets op (codec.WithOp), and any other error whose message does
// not start so is wrapped in an opError. Context errors are returned as
// they are, as tablekit returns them. A nil err gives nil.
func withOp(op string, err error) error {
	if err == nil || err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	err = codec.WithOp(op, err)
	if strings.HasPrefix(err.Error(), opname.Prefix(op)+":") {
		return err
	}
	return &opError{op: op, err: err}
}

// opError names the operation that failed in an error of another shape (a
// service error of tablekit, a conflict, a blob failure): its message is
// "patterns: <Op>: " and err's.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return opname.Prefix(e.op) + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// annotate puts context before what err says: in the Detail of its
// *tablekit.ValidationError or *tablekit.DecodeError (in place: tablekit
// makes them fresh for each call), so that withOp still names the
// operation first, or else by wrapping err.
func annotate(err error, context string) error {
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) {
		ve.Detail = context + ": " + ve.Detail
		return err
	}
	var de *tablekit.DecodeError
	if errors.As(err, &de) {
		de.Detail = context + ": " + de.Detail
		return err
	}
	return fmt.Errorf("%s: %w", context, err)
}

// invalid is the *tablekit.ValidationError of input op refuses.
func invalid(op, detail string) error {
	return &tablekit.ValidationError{Op: op, Detail: detail, Err: tablekit.ErrInvalidInput}
}

// usable returns the error of a method called on a value its constructor
// did not make (a zero or nil *Wide, *Large, ...): what matches
// tablekit.ErrInvalidInput and says which constructor to use.
func unusable(op, constructor string) error {
	return invalid(op, "zero or nil value: make one with patterns."+constructor)
}
