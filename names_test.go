package tablekit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
)

func TestValidateNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	cases := []struct {
		name     string
		validate func(string) error
		input    string
		want     string // "" means valid; else a part of the error
	}{
		{"table ok", tablekit.ValidateTableName, "Employees2024", ""},
		{"table min", tablekit.ValidateTableName, "abc", ""},
		{"table max", tablekit.ValidateTableName, long[:63], ""},
		{"table too short", tablekit.ValidateTableName, "ab", "is 2 characters long, not 3-63"},
		{"table too long", tablekit.ValidateTableName, long, "is 64 characters long"},
		{"table digit first", tablekit.ValidateTableName, "1abc", `starts with '1', not a letter`},
		{"table hyphen", tablekit.ValidateTableName, "my-table", `has '-' at byte 2`},
		{"table unicode", tablekit.ValidateTableName, "tablé", `has 'é' at byte 4`},
		{"table reserved", tablekit.ValidateTableName, "Tables", "is reserved"},
		{"table empty", tablekit.ValidateTableName, "", "is 0 characters long"},

		{"queue ok", tablekit.ValidateQueueName, "orders-2024-v1", ""},
		{"queue digits", tablekit.ValidateQueueName, "123", ""},
		{"queue upper", tablekit.ValidateQueueName, "Orders", `has uppercase 'O' at byte 0`},
		{"queue leading hyphen", tablekit.ValidateQueueName, "-orders", "starts with a hyphen"},
		{"queue trailing hyphen", tablekit.ValidateQueueName, "orders-", "ends with a hyphen"},
		{"queue double hyphen", tablekit.ValidateQueueName, "or--ders", "two hyphens in a row at byte 2"},
		{"queue underscore", tablekit.ValidateQueueName, "my_queue", `has '_' at byte 2`},
		{"queue too long", tablekit.ValidateQueueName, long, "is 64 characters long"},
		{"queue too short", tablekit.ValidateQueueName, "q", "is 1 characters long"},

		{"container ok", tablekit.ValidateContainerName, "logs-2024", ""},
		{"container root", tablekit.ValidateContainerName, "$root", ""},
		{"container logs", tablekit.ValidateContainerName, "$logs", ""},
		{"container dollar", tablekit.ValidateContainerName, "$other", `has '$' at byte 0`},
		{"container dot", tablekit.ValidateContainerName, "my.container", `has '.' at byte 2`},
		{"container upper", tablekit.ValidateContainerName, "myContainer", "uppercase 'C'"},
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
