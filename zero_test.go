package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"iter"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

// zeroValues are the zero value and the nil pointer of every exported type
// of the root package that has methods or is passed to one, as a user can
// make them without a constructor: `var t tablekit.Table[T]`,
// `&tablekit.Account{}`, ... TestZeroValuesNeverPanic calls every exported
// method of each; TestEveryExportedTypeHasAZeroValueCase checks that the
// list names every exported type.
var zeroValues = map[string][]any{
	"Account":          {&tablekit.Account{}, (*tablekit.Account)(nil)},
	"Table":            {&tablekit.Table[opItem]{}, (*tablekit.Table[opItem])(nil), &tablekit.Table[tablekit.Entity]{}},
	"BulkWriter":       {&tablekit.BulkWriter[opItem]{}, (*tablekit.BulkWriter[opItem])(nil)},
	"Governor":         {&tablekit.Governor{}, (*tablekit.Governor)(nil)},
	"Meter":            {&tablekit.Meter{}, (*tablekit.Meter)(nil)},
	"MeterSnapshot":    {tablekit.MeterSnapshot{}, &tablekit.MeterSnapshot{}},
	"MeterCount":       {tablekit.MeterCount{}},
	"Filter":           {tablekit.Filter{}, &tablekit.Filter{}},
	"Cursor":           {&tablekit.Cursor{}, (*tablekit.Cursor)(nil)},
	"Page":             {tablekit.Page[opItem]{}},
	"Entity":           {tablekit.Entity{}, &tablekit.Entity{}},
	"GUID":             {tablekit.GUID{}, &tablekit.GUID{}},
	"Action":           {tablekit.Action[opItem]{}},
	"BulkResult":       {tablekit.BulkResult{}},
	"BulkFailure":      {tablekit.BulkFailure{}},
	"ValidationError":  {&tablekit.ValidationError{}},
	"DecodeError":      {&tablekit.DecodeError{}},
	"TransactionError": {&tablekit.TransactionError{}},
	"ServiceError":     {&tablekit.ServiceError{}},
	"RequestError":     {&tablekit.RequestError{}},
	"Options":          {tablekit.Options{}},
	"TableOptions":     {tablekit.TableOptions{}},
	"QueryOptions":     {tablekit.QueryOptions{}},
	"BulkOptions":      {tablekit.BulkOptions{}},
	"GovernorOptions":  {tablekit.GovernorOptions{}},
	"RetryPolicy":      {tablekit.RetryPolicy{}},
	"Encryption":       {tablekit.Encryption{}},
	"TableScanPolicy":  {tablekit.TableScanPolicy(0)},
	"Service":          {tablekit.Service(0), tablekit.Service(200)},
	"Registry":         {&tablekit.Registry{}, (*tablekit.Registry)(nil)},
}

// noZeroValue are exported types a user never holds a value of: interfaces
// (implemented, not instantiated).
var noZeroValue = []string{"Store", "KeyResolver"}

// TestZeroValuesNeverPanic calls every exported method of every zero value
// (and nil pointer) with valid arguments: none panics, and what fails says
// so with an error matching ErrInvalidInput (an operation that needs an
// Account, a Table or a BulkWriter made by its constructor) rather than
// doing something else.
func TestZeroValuesNeverPanic(t *testing.T) {
	ctx := context.Background()
	for name, values := range zeroValues {
		for _, v := range values {
			rv := reflect.ValueOf(v)
			for i := range rv.NumMethod() {
				m := rv.Type().Method(i)
				what := fmt.Sprintf("%s: (%T).%s", name, v, m.Name)
				t.Run(strings.ReplaceAll(what, " ", ""), func(t *testing.T) {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s panics: %v", what, r)
						}
					}()
					out := rv.Method(i).Call(zeroArgs(ctx, rv.Method(i).Type()))
					for _, err := range resultErrors(out) {
						if err != nil && !errors.Is(err, tablekit.ErrInvalidInput) {
							t.Errorf("%s: %v (%T), want nil or an error matching ErrInvalidInput", what, err, err)
						}
					}
				})
			}
		}
	}
}

// zeroArgs returns arguments of the types of fn's parameters: valid ones
// (a live context, keys "p" and "r", a function that does nothing), so
// that a failure is the receiver's.
func zeroArgs(ctx context.Context, fn reflect.Type) []reflect.Value {
	var args []reflect.Value
	strs := []string{"items1", "rows22", "items1", "rows22"} // valid keys, and table, queue and container names
	for i := range fn.NumIn() {
		t := fn.In(i)
		if fn.IsVariadic() && i == fn.NumIn()-1 {
			break
		}
		switch {
		case t == reflect.TypeFor[context.Context]():
			args = append(args, reflect.ValueOf(ctx))
		case t.Kind() == reflect.String && t != reflect.TypeFor[azcore.ETag]():
			args = append(args, reflect.ValueOf(strs[0]).Convert(t))
			strs = strs[1:]
		case t == reflect.TypeFor[azcore.ETag]():
			args = append(args, reflect.ValueOf(azcore.ETagAny))
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
		switch x := o.Interface().(type) {
		case error:
			errs = append(errs, x)
		case iter.Seq2[opItem, error]:
			for _, err := range x {
				errs = append(errs, err)
			}
		case iter.Seq2[tablekit.Entity, error]:
			for _, err := range x {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func TestEveryExportedTypeHasAZeroValueCase(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				n := ts.Name.Name
				if !ts.Name.IsExported() || slices.Contains(noZeroValue, n) {
					continue
				}
				if _, ok := zeroValues[n]; !ok {
					t.Errorf("%s (%s) has no case in zeroValues", n, name)
				}
			}
		}
	}
}

// Functions that take a value a user may leave nil refuse it with an
// error matching ErrInvalidInput.
func TestNilArgumentsAreRefused(t *testing.T) {
	ctx := context.Background()
	for name, err := range map[string]error{
		"OpenTable(nil)": func() error { _, err := tablekit.OpenTable[opItem](nil, "Items", nil); return err }(),
		"QueryAs(nil)": func() error {
			for _, err := range tablekit.QueryAs[opItem, opItem](ctx, nil, tablekit.Filter{}, nil) {
				return err
			}
			return nil
		}(),
		"Collect(nil)": func() error { _, err := tablekit.Collect[opItem](nil, 0); return err }(),
		"Modify(nil fn)": func() error {
			_, err := (&tablekit.Table[opItem]{}).Modify(ctx, "p", "r", nil)
			return err
		}(),
		"Governor.Do(nil write)": tablekit.NewGovernor(nil).Do(ctx, "T", "p", 1, nil),
	} {
		if !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("%s: %v, want an error matching ErrInvalidInput", name, err)
		}
	}
}

// Open and OpenWithCredential refuse bad input with a *ValidationError
// naming the operation, as their docs say.
func TestOpenRefusalsAreValidationErrors(t *testing.T) {
	for name, err := range map[string]error{
		`Open("")`:                     second(tablekit.Open("", nil)),
		`Open("AccountName=a")`:        second(tablekit.Open("AccountName=a", nil)),
		`Open(bad key)`:                second(tablekit.Open("AccountName=a;AccountKey=!!", nil)),
		`OpenWithCredential(nil cred)`: second(tablekit.OpenWithCredential("acct", nil, nil)),
		`OpenWithCredential("")`:       second(tablekit.OpenWithCredential("", nil, nil)),
	} {
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || !strings.HasPrefix(ve.Op, "Open") || !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("%s: %v (%T), want a *ValidationError of Open matching ErrInvalidInput", name, err, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// A size refused before sending says what it counts: a string is measured
// in bytes of UTF-16, as Azure measures it.
func TestSizeErrorsStateTheirUnit(t *testing.T) {
	type big struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		S  string
		B  []byte
	}
	for name, c := range map[string]struct {
		v    big
		want string
	}{
		"string": {big{PK: "p", RK: "r", S: strings.Repeat("x", 102400)}, "(size 204800 bytes of UTF-16)"},
		"binary": {big{PK: "p", RK: "r", B: make([]byte, 70000)}, "(size 70000 bytes)"},
	} {
		_, err := tablekit.ToEntity(c.v)
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a message with %q", name, err, c.want)
		}
	}
}

// The messages of zero and partly filled errors are still sentences.
func TestErrorMessagesOfZeroValues(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&tablekit.ValidationError{}, "tablekit: invalid input"},
		{&tablekit.DecodeError{}, "tablekit: cannot read"},
		{&tablekit.TransactionError{Index: -1}, "tablekit: transaction failed"},
		{&tablekit.ServiceError{}, "tablekit: the service refused the request"},
		{&tablekit.RequestError{}, "tablekit: no answer from the service"},
		{&tablekit.ValidationError{Op: "patterns.Wide.Merge", Detail: "x"}, "patterns: Wide.Merge: invalid input: x"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%T: %q, want %q", c.err, got, c.want)
		}
	}
}
