package tablekit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/core"
)

func TestValidateNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	cases := []struct {
		name     string
		validate func(string) error
		input    string
		want     string // "" means valid; else a part of the error
	}{
		{"table ok", core.ValidateTableName, "Employees2024", ""},
		{"table min", core.ValidateTableName, "abc", ""},
		{"table max", core.ValidateTableName, long[:63], ""},
		{"table too short", core.ValidateTableName, "ab", "is 2 characters long, not 3-63"},
		{"table too long", core.ValidateTableName, long, "is 64 characters long"},
		{"table digit first", core.ValidateTableName, "1abc", `starts with '1', not a letter`},
		{"table hyphen", core.ValidateTableName, "my-table", `has '-' at byte 2`},
		{"table unicode", core.ValidateTableName, "tablé", `has 'é' at byte 4`},
		{"table reserved", core.ValidateTableName, "Tables", "is reserved"},
		{"table empty", core.ValidateTableName, "", "is 0 characters long"},

		{"queue ok", core.ValidateQueueName, "orders-2024-v1", ""},
		{"queue digits", core.ValidateQueueName, "123", ""},
		{"queue upper", core.ValidateQueueName, "Orders", `has uppercase 'O' at byte 0`},
		{"queue leading hyphen", core.ValidateQueueName, "-orders", "starts with a hyphen"},
		{"queue trailing hyphen", core.ValidateQueueName, "orders-", "ends with a hyphen"},
		{"queue double hyphen", core.ValidateQueueName, "or--ders", "two hyphens in a row at byte 2"},
		{"queue underscore", core.ValidateQueueName, "my_queue", `has '_' at byte 2`},
		{"queue too long", core.ValidateQueueName, long, "is 64 characters long"},
		{"queue too short", core.ValidateQueueName, "q", "is 1 characters long"},

		{"container ok", core.ValidateContainerName, "logs-2024", ""},
		{"container root", core.ValidateContainerName, "$root", ""},
		{"container logs", core.ValidateContainerName, "$logs", ""},
		{"container dollar", core.ValidateContainerName, "$other", `has '$' at byte 0`},
		{"container dot", core.ValidateContainerName, "my.container", `has '.' at byte 2`},
		{"container upper", core.ValidateContainerName, "myContainer", "uppercase 'C'"},
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
