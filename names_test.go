package tablekit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/names"
)

func TestValidateNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	cases := []struct {
		name     string
		validate func(string) error
		input    string
		want     string // "" means valid; else a part of the error
	}{
		{"table ok", names.CheckTable, "Employees2024", ""},
		{"table min", names.CheckTable, "abc", ""},
		{"table max", names.CheckTable, long[:63], ""},
		{"table too short", names.CheckTable, "ab", "is 2 characters long, not 3-63"},
		{"table too long", names.CheckTable, long, "is 64 characters long"},
		{"table digit first", names.CheckTable, "1abc", `starts with '1', not a letter`},
		{"table hyphen", names.CheckTable, "my-table", `has '-' at byte 2`},
		{"table unicode", names.CheckTable, "tablé", `has 'é' at byte 4`},
		{"table reserved", names.CheckTable, "Tables", "is reserved"},
		{"table empty", names.CheckTable, "", "is 0 characters long"},

		{"queue ok", names.CheckQueue, "orders-2024-v1", ""},
		{"queue digits", names.CheckQueue, "123", ""},
		{"queue upper", names.CheckQueue, "Orders", `has uppercase 'O' at byte 0`},
		{"queue leading hyphen", names.CheckQueue, "-orders", "starts with a hyphen"},
		{"queue trailing hyphen", names.CheckQueue, "orders-", "ends with a hyphen"},
		{"queue double hyphen", names.CheckQueue, "or--ders", "two hyphens in a row at byte 2"},
		{"queue underscore", names.CheckQueue, "my_queue", `has '_' at byte 2`},
		{"queue too long", names.CheckQueue, long, "is 64 characters long"},
		{"queue too short", names.CheckQueue, "q", "is 1 characters long"},

		{"container ok", names.CheckContainer, "logs-2024", ""},
		{"container root", names.CheckContainer, "$root", ""},
		{"container logs", names.CheckContainer, "$logs", ""},
		{"container dollar", names.CheckContainer, "$other", `has '$' at byte 0`},
		{"container dot", names.CheckContainer, "my.container", `has '.' at byte 2`},
		{"container upper", names.CheckContainer, "myContainer", "uppercase 'C'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.validate(c.input)
			if c.want == "" {
				if err != nil {
					t.Fatalf("%q: unexpected error %v", c.input, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%q: no error, want one containing %q", c.input, c.want)
			}
			if !errors.Is(err, tablekit.ErrInvalidKey) {
				t.Errorf("%v does not match ErrInvalidKey", err)
			}
			var ve *tablekit.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("%v is not a *ValidationError", err)
			}
			if ve.Limit == "" || !strings.Contains(err.Error(), fmt.Sprintf(" name %q ", c.input)) || strings.Contains(err.Error(), "entity") {
				t.Errorf("ValidationError %+v: want a Limit, and a message naming the name %q (not an entity)", ve, c.input)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}
