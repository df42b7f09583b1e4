package tablekit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/codec"
)

// oneKey is a KeyResolver with one key, for the internal tests (package
// keyring imports this package).
type oneKey struct{}

func (oneKey) CurrentKey(context.Context) (string, []byte, error) { return "k1", make([]byte, 32), nil }

func (oneKey) ResolveKey(_ context.Context, id string) ([]byte, error) {
	if id != "k1" {
		return nil, ErrKeyNotFound
	}
	return make([]byte, 32), nil
}

// TestCryptCheckFilter: a filter that compares an encrypted property is
// refused before sending (what Table.prepare checks), one that only names
// it in a key or a string is not.
func TestCryptCheckFilter(t *testing.T) {
	c, err := codec.For[Entity]("T", &Encryption{Keys: oneKey{}, Properties: []string{"SSN"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Filter{
		Where("SSN eq ?", "123"),
		Where("PartitionKey eq ? and (SSN ge ? or Age lt ?)", "p", "1", 3),
		Not(Where("SSN eq ?", "x")),
	} {
		if err := c.CheckFilter(f.Properties()); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "SSN") {
			t.Errorf("%v: %v", f, err)
		}
	}
	for _, f := range []Filter{
		{},
		PartitionEq("SSN"),
		Where("Name eq ?", "SSN eq 'x'"),
		RowKeyPrefix("p", "SSN"),
	} {
		if err := c.CheckFilter(f.Properties()); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
}
