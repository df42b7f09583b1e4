package archive_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
)

// zeroValues are the zero value and the nil pointer of every exported type
// of package archive, as a user can make them without a constructor.
// TestZeroValuesNeverPanic calls every exported method of each;
// TestEveryExportedTypeHasAZeroValueCase checks that the list names every
// exported type.
var zeroValues = map[string][]any{
	"Client":         {&archive.Client{}, (*archive.Client)(nil)},
	"Worker":         {&archive.Worker{}, (*archive.Worker)(nil)},
	"Mux":            {&archive.Mux{}, (*archive.Mux)(nil)},
	"Mover":          {&archive.Mover[Employee]{}, (*archive.Mover[Employee])(nil), &archive.Mover[Employee]{Current: &tablekit.Table[Employee]{}, Archive: &tablekit.Table[Employee]{}}},
	"Message":        {&archive.Message{}, (*archive.Message)(nil)},
	"HandlerFunc":    {archive.HandlerFunc(nil)},
	"MoveRequest":    {archive.MoveRequest{}},
	"Poisoned":       {archive.Poisoned{}},
	"Stats":          {archive.Stats{}},
	"WorkerOptions":  {archive.WorkerOptions{}},
	"ClientOptions":  {archive.ClientOptions{}},
	"EnqueueOptions": {archive.EnqueueOptions{}},
}

// noZeroValue are exported types a user never holds a value of:
// interfaces (implemented, not instantiated).
var noZeroValue = []string{"Handler"}

// TestZeroValuesNeverPanic calls every exported method of every zero value
// (and nil pointer) with valid arguments: none panics, and what fails says
// so with an error matching tablekit.ErrInvalidInput.
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
					for _, o := range out {
						if err, ok := o.Interface().(error); ok && err != nil && !errors.Is(err, tablekit.ErrInvalidInput) {
							t.Errorf("%s: %v (%T), want nil or an error matching ErrInvalidInput", what, err, err)
						}
					}
				})
			}
		}
	}
}

// zeroArgs returns arguments of the types of fn's parameters: valid ones
// (a live context, valid names, a function that does nothing), so that a
// failure is the receiver's.
func zeroArgs(ctx context.Context, fn reflect.Type) []reflect.Value {
	var args []reflect.Value
	for i := range fn.NumIn() {
		t := fn.In(i)
		switch {
		case t == reflect.TypeFor[context.Context]():
			args = append(args, reflect.ValueOf(ctx))
		case t.Kind() == reflect.String:
			args = append(args, reflect.ValueOf("items1").Convert(t))
		case t == reflect.TypeFor[any]():
			args = append(args, reflect.ValueOf(map[string]string{"a": "b"}))
		case t == reflect.TypeFor[archive.MoveRequest]():
			args = append(args, reflect.ValueOf(archive.MoveRequest{PartitionKey: "p", RowKey: "r"}))
		case t == reflect.TypeFor[*archive.Message]():
			args = append(args, reflect.ValueOf(&archive.Message{ID: "m", Kind: "k", Payload: []byte(`{}`)}))
		case t == reflect.TypeFor[archive.Poisoned]():
			args = append(args, reflect.ValueOf(archive.Poisoned{Kind: "k", Payload: []byte(`{}`), Blob: "claims/x.json"}))
		default:
			args = append(args, reflect.Zero(t))
		}
	}
	return args
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
