package stream_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/stream"
)

// TestZeroValuesNeverPanic calls every exported method of the zero Store
// and of a nil *Store with valid arguments: none panics, and each fails
// with an error matching tablekit.ErrInvalidInput that names the
// operation and the constructor to use.
func TestZeroValuesNeverPanic(t *testing.T) {
	ctx := context.Background()
	for _, v := range []*stream.Store{{}, nil} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumMethod() {
			m := rv.Type().Method(i)
			what := fmt.Sprintf("(%#v).%s", v, m.Name)
			t.Run(m.Name, func(t *testing.T) {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s panics: %v", what, r)
					}
				}()
				out := rv.Method(i).Call(validArgs(ctx, rv.Method(i).Type()))
				if !canFail(rv.Method(i).Type()) {
					// An accessor (Table): a zero Store has nothing to return.
					for _, o := range out {
						if !o.IsZero() {
							t.Errorf("%s returned %v, want the zero value", what, o)
						}
					}
					return
				}
				errs := resultErrors(out)
				if len(errs) == 0 {
					t.Fatalf("%s returned no error", what)
				}
				for _, err := range errs {
					if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.HasPrefix(err.Error(), "stream: Store.") || !strings.Contains(err.Error(), "stream.NewStore") {
						t.Errorf("%s: %v, want an error matching ErrInvalidInput naming the operation and stream.NewStore", what, err)
					}
				}
			})
		}
	}
	var ce stream.ConflictError // the zero ConflictError prints, and matches
	if ce.Error() == "" || !errors.Is(&ce, tablekit.ErrPreconditionFailed) {
		t.Errorf("zero ConflictError: %q", ce.Error())
	}
	var te stream.TrimmedError // the zero TrimmedError too
	if te.Error() == "" || !errors.Is(&te, stream.ErrTrimmed) {
		t.Errorf("zero TrimmedError: %q", te.Error())
	}
}

// canFail reports whether a method of type fn can report an error: it
// returns one, or an iterator that yields one.
func canFail(fn reflect.Type) bool {
	for i := range fn.NumOut() {
		o := fn.Out(i)
		if o == reflect.TypeFor[error]() || o.Kind() == reflect.Func {
			return true
		}
	}
	return false
}

// validArgs returns valid arguments of fn's parameters, so that a failure
// is the receiver's.
func validArgs(ctx context.Context, fn reflect.Type) []reflect.Value {
	var args []reflect.Value
	for i := range fn.NumIn() {
		t := fn.In(i)
		if fn.IsVariadic() && i == fn.NumIn()-1 {
			break
		}
		switch {
		case t == reflect.TypeFor[context.Context]():
			args = append(args, reflect.ValueOf(ctx))
		case t == reflect.TypeFor[stream.ID]():
			args = append(args, reflect.ValueOf(stream.ID{PartitionKey: "p"}))
		case t == reflect.TypeFor[[]stream.Event]():
			args = append(args, reflect.ValueOf([]stream.Event{{Data: Placed{}}}))
		case t.Kind() == reflect.Int64:
			args = append(args, reflect.ValueOf(int64(1)))
		default:
			args = append(args, reflect.Zero(t))
		}
	}
	return args
}

// resultErrors returns the errors among a call's results, ranging over an
// iterator to get the errors it yields.
func resultErrors(out []reflect.Value) []error {
	var errs []error
	for _, o := range out {
		if o.Kind() == reflect.Func && o.Type().NumIn() == 1 { // an iter.Seq2[V, error]
			yield := o.Type().In(0)
			o.Call([]reflect.Value{reflect.MakeFunc(yield, func(args []reflect.Value) []reflect.Value {
				if err, ok := args[1].Interface().(error); ok && err != nil {
					errs = append(errs, err)
				}
				return []reflect.Value{reflect.ValueOf(true)}
			})})
			continue
		}
		if err, ok := o.Interface().(error); ok && err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
