package codec

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// edmType is one of the Entity Data Model types a table property can have.
type edmType uint8

// The EDM types of Azure Table storage. The zero value is edmString.
const (
	edmString   edmType = iota // Go string
	edmInt32                   // Go int32
	edmInt64                   // Go int64 (int, time.Duration, ...)
	edmDouble                  // Go float64
	edmBoolean                 // Go bool
	edmDateTime                // Go time.Time, UTC, 100 ns precision
	edmGUID                    // Go GUID (or any [16]byte type)
	edmBinary                  // Go []byte
)

var edmNames = [...]string{"Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.Boolean", "Edm.DateTime", "Edm.Guid", "Edm.Binary"}

// String returns the OData name of the type, e.g. "Edm.Int64".
func (t edmType) String() string {
	if int(t) < len(edmNames) {
		return edmNames[t]
	}
	return fmt.Sprintf("edmType(%d)", uint8(t))
}

// parseEdmType maps an "@odata.type" annotation to its edmType.
func parseEdmType(s []byte) (edmType, bool) {
	for i, n := range edmNames {
		if string(s) == n {
			return edmType(i), true
		}
	}
	return 0, false
}

// GUID is a 128-bit identifier stored as Edm.Guid: an Entity's Edm.Guid
// values read back as GUIDs. Any Go type whose underlying type is [16]byte
// (such as github.com/google/uuid.UUID, which also parses the text form)
// maps to Edm.Guid too, and converts to and from a GUID.
type GUID [16]byte

// String formats g as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in lower case.
func (g GUID) String() string {
	return string(appendGUID(nil, g))
}

func appendGUID(dst []byte, g [16]byte) []byte {
	var buf [36]byte
	hex.Encode(buf[0:8], g[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], g[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], g[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], g[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], g[10:16])
	return append(dst, buf[:]...)
}

// ParseGUID parses the canonical 36-character form of a GUID
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), optionally in braces, in either
// case, with a *ValidationError matching ErrInvalidInput for anything
// else.
func ParseGUID(s string) (GUID, error) {
	g, ok := parseGUIDBytes([]byte(s))
	if !ok {
		return GUID{}, &ValidationError{Detail: fmt.Sprintf("%q is not a GUID (want xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", s), Err: ErrInvalidInput}
	}
	return g, nil
}

// parseGUIDBytes parses a GUID as ParseGUID does, reporting whether s is
// one.
func parseGUIDBytes(s []byte) (GUID, bool) {
	var g GUID
	if len(s) == 38 && s[0] == '{' && s[37] == '}' {
		s = s[1:37]
	}
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++ // the hyphens, checked above
			continue
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return g, false
		}
		g[j] = hi<<4 | lo
		j++
		i += 2
	}
	return g, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Entity is a table entity as a property bag, for tables that hold several
// kinds of entity or whose shape is not known at compile time. Use it as the
// type parameter of tablekit.Table (Table[Entity]).
//
// Property values must have one of these Go types, which fix the EDM type:
// string (Edm.String), int32 (Edm.Int32), int64 or int (Edm.Int64), float64
// (Edm.Double), bool (Edm.Boolean), time.Time (Edm.DateTime), GUID or any
// [16]byte type (Edm.Guid) and []byte (Edm.Binary). A nil value is absent.
// Decoded entities hold exactly those types, with int64 for Edm.Int64 and
// GUID for Edm.Guid, so every value round-trips with its type.
type Entity struct {
	PartitionKey string
	RowKey       string
	// Timestamp is set by the service on every write; it is never sent.
	Timestamp time.Time
	// ETag is the entity's version as last read or written.
	ETag azcore.ETag
	// Properties holds the custom properties by name.
	Properties map[string]any
}
