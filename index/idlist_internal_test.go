package index

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/keys"
)

func TestIDListChunks(t *testing.T) {
	// 100 ids of 1,000 characters: more than one 64 KiB property.
	var ids []string
	for i := range 100 {
		ids = append(ids, fmt.Sprintf("%04d", i)+strings.Repeat("x", 996))
	}
	e := tablekit.Entity{PartitionKey: "p", RowKey: "r"}
	if err := setIDs("test", &e, ids, "test"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Properties["IDs2"]; !ok {
		t.Fatalf("no second chunk: %d properties", len(e.Properties))
	}
	for name, v := range e.Properties {
		if s, ok := v.(string); ok && keys.KeySize(s) > limits.PropertyBytes {
			t.Errorf("%s holds %d bytes", name, keys.KeySize(s))
		}
	}
	if got := readIDs(&e); !slices.Equal(got, ids) {
		t.Errorf("round trip lost ids: %d of %d", len(got), len(ids))
	}
	if e.Properties[countProperty] != int64(100) {
		t.Errorf("Count = %v", e.Properties[countProperty])
	}

	// 600 such ids (1.2 MB as UTF-16) do not fit in an entity.
	for i := 100; i < 600; i++ {
		ids = append(ids, fmt.Sprintf("%04d", i)+strings.Repeat("x", 996))
	}
	err := setIDs("test", &e, ids, "Sales/lastname!Jones")
	var ve *tablekit.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(err.Error(), "Index.Blobs") || !strings.Contains(err.Error(), "bytes)") || ve.Entity != "Sales/lastname!Jones" {
		t.Fatalf("oversized list: %v, want ErrTooLarge in bytes pointing to Index.Blobs", err)
	}

	// The empty list and ids with spaces and tabs (pk\trk) survive.
	e = tablekit.Entity{}
	if err := setIDs("test", &e, nil, "x"); err != nil || readIDs(&e) != nil {
		t.Errorf("empty list: %v %v", err, readIDs(&e))
	}
	two := []string{joinID(ID{"Sales", "a b"}), joinID(ID{"Sales", "c"})}
	if err := setIDs("test", &e, two, "x"); err != nil || !slices.Equal(readIDs(&e), two) || splitID(two[0]) != (ID{"Sales", "a b"}) {
		t.Errorf("pk/rk ids: %v %v", err, readIDs(&e))
	}
}
