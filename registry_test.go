package tablekit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
)

// regEmployee is a kind of entity with keys; regMoved one without (an
// event type, whose store sets its row's keys).
type regEmployee struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Name       string `table:"Name"`
}

type regMoved struct {
	To string `table:"To"`
}

// TestZeroRegistry: the zero Registry is ready to use.
func TestZeroRegistry(t *testing.T) {
	var reg tablekit.Registry
	if err := tablekit.Register[regEmployee](&reg, "Employee", 1); err != nil {
		t.Fatal(err)
	}
	e, err := reg.Encode(regEmployee{Department: "d", Key: "k", Name: "Ann"})
	if err != nil || e.Properties["EntityType"] != "Employee.v1" {
		t.Fatalf("Encode: %v, %v", e.Properties, err)
	}
	v, err := reg.Decode(e)
	if err != nil || v.(regEmployee).Name != "Ann" {
		t.Fatalf("Decode: %+v, %v", v, err)
	}
	if k, ver, ok := reg.Kind(e); k != "Employee" || ver != 1 || !ok {
		t.Fatalf("Kind: %s, %d, %v", k, ver, ok)
	}
}

// TestRegistryKindOf: KindOf names the kind and version a value's type is
// registered as, and reports false for others (an Entity, nil, a nil
// Registry).
func TestRegistryKindOf(t *testing.T) {
	reg := &tablekit.Registry{}
	if err := tablekit.Register[regMoved](reg, "Moved", 2); err != nil {
		t.Fatal(err)
	}
	if k, v, ok := reg.KindOf(regMoved{To: "Oslo"}); k != "Moved" || v != 2 || !ok {
		t.Errorf("KindOf(regMoved) = %q, %d, %v", k, v, ok)
	}
	var nilReg *tablekit.Registry
	for name, ok := range map[string]bool{
		"Entity":       second3(reg.KindOf(tablekit.Entity{})),
		"nil":          second3(reg.KindOf(nil)),
		"unregistered": second3(reg.KindOf(regEmployee{})),
		"pointer":      second3(reg.KindOf(&regMoved{})),
		"nil Registry": second3(nilReg.KindOf(regMoved{})),
	} {
		if ok {
			t.Errorf("KindOf of %s reports a kind", name)
		}
	}
}

func second3(_ string, _ int, ok bool) bool { return ok }

// TestRegistryRefusalsNameTheirOperation: every refusal of Register and of
// a Registry names the operation in ValidationError.Op, not in its Detail,
// and matches ErrInvalidInput.
func TestRegistryRefusalsNameTheirOperation(t *testing.T) {
	reg := &tablekit.Registry{}
	var nilReg *tablekit.Registry
	errRegister := tablekit.Register[tablekit.Entity](reg, "Thing", 1)
	errNil := tablekit.Register[regEmployee](nil, "Employee", 1)
	_, errEncode := reg.Encode(struct{ A string }{"x"})
	_, errNilEncode := nilReg.Encode(regEmployee{})
	_, errNilDecode := nilReg.Decode(tablekit.Entity{})
	for _, c := range []struct {
		op  string
		err error
	}{
		{"tablekit.Register", errRegister},
		{"tablekit.Register", errNil},
		{"tablekit.Registry.Encode", errEncode},
		{"tablekit.Registry.Encode", errNilEncode},
		{"tablekit.Registry.Decode", errNilDecode},
	} {
		var ve *tablekit.ValidationError
		if !errors.As(c.err, &ve) || ve.Op != c.op || strings.Contains(ve.Detail, c.op) || !errors.Is(c.err, tablekit.ErrInvalidInput) || !strings.HasPrefix(c.err.Error(), "tablekit: ") {
			t.Errorf("%s: %v", c.op, c.err)
		}
	}
}
