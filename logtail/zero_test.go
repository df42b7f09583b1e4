package logtail_test

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
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/logtail"
)

// zeroValues are the zero value and the nil pointer of every exported type
// of package logtail, as a user can make them without a constructor.
// TestZeroValuesNeverPanic calls every exported method of each;
// TestEveryExportedTypeHasAZeroValueCase checks that the list names every
// exported type.
var zeroValues = map[string][]any{
	"Log":           {&logtail.Log[event]{}, (*logtail.Log[event])(nil)},
	"Writer":        {&logtail.Writer{}, (*logtail.Writer)(nil)},
	"Reader":        {&logtail.Reader{}, (*logtail.Reader)(nil)},
	"Entry":         {logtail.Entry{}, &logtail.Entry{}},
	"Record":        {logtail.Record{}},
	"BlobInfo":      {logtail.BlobInfo{}},
	"WriterStats":   {logtail.WriterStats{}},
	"Options":       {logtail.Options{}},
	"PageOptions":   {logtail.PageOptions{}},
	"WriterOptions": {logtail.WriterOptions{}},
}

// noZeroValue are exported types a user never holds a value of: the
// constraint on a Log's entry type.
var noZeroValue = []string{"HasEntry"}

// TestZeroValuesNeverPanic calls every exported method of every zero value
// (and nil pointer) with valid arguments: none panics, and what fails says
// so with an error matching tablekit.ErrInvalidInput.
func TestZeroValuesNeverPanic(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
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
					var args []reflect.Value
					times := []time.Time{now.Add(-time.Hour), now}
					for j := range rv.Method(i).Type().NumIn() {
						switch at := rv.Method(i).Type().In(j); {
						case at == reflect.TypeFor[context.Context]():
							args = append(args, reflect.ValueOf(ctx))
						case at.Kind() == reflect.String:
							args = append(args, reflect.ValueOf("p"))
						case at.Kind() == reflect.Int:
							args = append(args, reflect.ValueOf(1))
						case at == reflect.TypeFor[time.Time]():
							args = append(args, reflect.ValueOf(times[0]))
							times = times[1:]
						case at == reflect.TypeFor[logtail.Record]():
							args = append(args, reflect.ValueOf(logtail.Record{Time: now, Message: "m"}))
						default:
							args = append(args, reflect.Zero(at))
						}
					}
					for _, o := range rv.Method(i).Call(args) {
						var errs []error
						switch x := o.Interface().(type) {
						case error:
							errs = append(errs, x)
						case iter.Seq2[event, error]:
							for _, err := range x {
								errs = append(errs, err)
							}
						case iter.Seq2[logtail.Record, error]:
							for _, err := range x {
								errs = append(errs, err)
							}
						}
						for _, err := range errs {
							if err != nil && !errors.Is(err, tablekit.ErrInvalidInput) {
								t.Errorf("%s: %v (%T), want nil or an error matching ErrInvalidInput", what, err, err)
							}
						}
					}
				})
			}
		}
	}
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
				n := s.(*ast.TypeSpec).Name.Name
				if !ast.IsExported(n) || slices.Contains(noZeroValue, n) {
					continue
				}
				if _, ok := zeroValues[n]; !ok {
					t.Errorf("%s (%s) has no case in zeroValues", n, name)
				}
			}
		}
	}
}
