package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// The stores of package patterns have tablekit's verbs.
var (
	_ tablekit.Store[tablekit.Entity] = (*patterns.Wide[tablekit.Entity])(nil)
	_ tablekit.Store[Year]            = (*patterns.Wide[Year])(nil)
	_ tablekit.Store[tablekit.Entity] = (*patterns.Large[tablekit.Entity])(nil)
	_ tablekit.Store[Doc]             = (*patterns.Large[Doc])(nil)
)

// zeroValues are the zero value and the nil pointer of every exported type
// of package patterns with methods, as a user can make them without a
// constructor. TestZeroValuesNeverPanic calls every exported method of
// each.
var zeroValues = map[string][]any{
	"Wide":         {&patterns.Wide[tablekit.Entity]{}, (*patterns.Wide[tablekit.Entity])(nil), &patterns.Wide[Year]{}, (&patterns.Wide[Year]{}).WithKey("k"), (*patterns.Wide[Year])(nil).WithKey("k")},
	"Large":        {&patterns.Large[tablekit.Entity]{}, (*patterns.Large[tablekit.Entity])(nil), &patterns.Large[Doc]{}},
	"Series":       {&patterns.Series{}, (*patterns.Series)(nil)},
	"Timeline":     {&patterns.Timeline[tablekit.Entity]{}, (*patterns.Timeline[tablekit.Entity])(nil)},
	"PeriodTables": {&patterns.PeriodTables[tablekit.Entity]{}, (*patterns.PeriodTables[tablekit.Entity])(nil)},
	"Mixed":        {&patterns.Mixed{}, (*patterns.Mixed)(nil), (&patterns.Mixed{}).WithKey("k"), (*patterns.Mixed)(nil).WithKey("k")},
	"Denormalizer": {&patterns.Denormalizer[tablekit.Entity]{}, (*patterns.Denormalizer[tablekit.Entity])(nil)},
}

// testOnly are the methods export_test.go adds for the tests, and those
// that return a value to use rather than an error (WithKey: zeroValues
// holds what it returns for a zero value).
var testOnly = map[string]bool{"Parts": true, "Refs": true, "Partitions": true, "Name": true, "WithKey": true}

// TestZeroValuesNeverPanic calls every exported method of every zero value
// (and nil pointer) with valid arguments: none panics, and each fails with
// an error matching tablekit.ErrInvalidInput that names the operation and
// the constructor to use.
func TestZeroValuesNeverPanic(t *testing.T) {
	ctx := context.Background()
	for name, values := range zeroValues {
		for _, v := range values {
			rv := reflect.ValueOf(v)
			for i := range rv.NumMethod() {
				m := rv.Type().Method(i)
				if testOnly[m.Name] {
					continue
				}
				what := fmt.Sprintf("%s: (%T).%s", name, v, m.Name)
				t.Run(strings.ReplaceAll(what, " ", ""), func(t *testing.T) {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s panics: %v", what, r)
						}
					}()
					out := rv.Method(i).Call(zeroArgs(ctx, rv.Method(i).Type()))
					errs := resultErrors(out)
					if len(errs) == 0 {
						t.Fatalf("%s returned no error", what)
					}
					for _, err := range errs {
						if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.HasPrefix(err.Error(), "patterns: ") {
							t.Errorf("%s: %v (%T), want an error matching ErrInvalidInput, starting \"patterns: \"", what, err, err)
						}
					}
				})
			}
		}
	}
}

// zeroArgs returns valid arguments of the types of fn's parameters, so
// that a failure is the receiver's.
func zeroArgs(ctx context.Context, fn reflect.Type) []reflect.Value {
	var args []reflect.Value
	for i := range fn.NumIn() {
		t := fn.In(i)
		if fn.IsVariadic() && i == fn.NumIn()-1 {
			break
		}
		switch {
		case t == reflect.TypeFor[context.Context]():
			args = append(args, reflect.ValueOf(ctx))
		case t == reflect.TypeFor[azcore.ETag]():
			args = append(args, reflect.ValueOf(azcore.ETagAny))
		case t.Kind() == reflect.String:
			args = append(args, reflect.ValueOf("p").Convert(t))
		case t == reflect.TypeFor[time.Time]():
			args = append(args, reflect.ValueOf(time.Now()))
		case t.Kind() == reflect.Func:
			args = append(args, reflect.MakeFunc(t, func([]reflect.Value) []reflect.Value {
				out := make([]reflect.Value, t.NumOut())
				for j := range out {
					out[j] = reflect.Zero(t.Out(j))
				}
				return out
			}))
		case t.Kind() == reflect.Int:
			args = append(args, reflect.ValueOf(1))
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

var _ iter.Seq2[int, error] // resultErrors ranges over these

// TestNilArgumentsAreRefused: a nil function or a zero Period is refused
// with an error matching ErrInvalidInput, never a panic.
func TestNilArgumentsAreRefused(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	w, err := patterns.NewWide(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := patterns.NewLarge(tbl, testenv.NewContainer(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := patterns.NewSeries(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, errW := w.Modify(ctx, "p", "r", nil)
	_, errL := l.Modify(ctx, "p", "r", nil)
	_, errS := s.Modify(ctx, "p", "r", nil)
	_, errP := patterns.NewPeriodTables[Employee](acct, "Logins", patterns.Period{}, nil)
	for name, err := range map[string]error{"Wide.Modify": errW, "Large.Modify": errL, "Series.Modify": errS, "NewPeriodTables": errP} {
		if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.HasPrefix(err.Error(), "patterns: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
