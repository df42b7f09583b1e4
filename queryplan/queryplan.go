// Package queryplan says what kind of query a table filter makes, before
// anything is sent, in the terms of Microsoft's table design guide
// ("Design for querying"). From the cheapest:
//
//   - a point query reads one entity (PartitionKey eq and RowKey eq);
//   - a range query reads a RowKey range or prefix of one partition;
//   - a partition scan reads every entity of one partition (PartitionKey eq
//     without a usable RowKey condition);
//   - a partition range scan reads the partitions of a PartitionKey range;
//   - a table scan reads every partition of the table in turn.
//
// [Explain] parses the OData text of a filter (what tablekit.Where and the
// key helpers build, or hand-written text) and returns a [Plan]: its
// [Class], the keys or key ranges the service can use, the properties
// tested entity by entity, and the reasons the query is less efficient
// than it could be. tablekit.Filter.Explain is the same for a Filter;
// tablekit's TableScanPolicy and the tablekit-vet checker use it to catch
// table scans.
//
// Explain judges the filter's shape, not the data: a partition scan of a
// small partition is cheap, and a point query for a missing entity finds
// nothing. It never panics: text it cannot parse (or nests deeper than 500
// levels) gives a Plan of class [Unknown] with Err set.
//
// A Plan's Reasons are sentences for people, such as "or over RowKeys (a
// partition scan; run one point query per RowKey)", listed in a fixed
// order; their wording may improve between versions, so programs decide
// on the Class and the keys, not on the text. The reasons are: no filter;
// filters only on properties; RowKey without PartitionKey; no usable
// PartitionKey condition; an or over PartitionKeys or over RowKeys; a key
// under not, compared with ne, with a value that is not a string (which
// matches nothing) or with a property; no usable RowKey condition; a
// condition on Timestamp; a PartitionKey range; a key required to equal
// two values (which matches nothing).
package queryplan

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/keys"
)

// Class is the kind of query a filter makes.
type Class uint8

// The classes, from the most to the least efficient.
const (
	// Point reads one entity: PartitionKey eq pk and RowKey eq rk.
	Point Class = iota + 1
	// Range reads a RowKey range (or prefix) of one partition:
	// PartitionKey eq pk and RowKey bounded by ge/gt/lt/le.
	Range
	// PartitionScan reads every entity of one partition: PartitionKey eq
	// pk without a usable RowKey condition (other properties are tested
	// entity by entity).
	PartitionScan
	// PartitionRange reads the partitions of a PartitionKey range
	// (PartitionKey ge/gt/lt/le, no PartitionKey equality), as
	// tablekit.PartitionRange builds.
	PartitionRange
	// TableScan reads every partition of the table in turn: no
	// PartitionKey equality or range the service can use.
	TableScan
	// Unknown is a filter Explain cannot parse (see Plan.Err). A query
	// with it is treated as a possible table scan.
	Unknown
)

// String returns the guide's name of the class, e.g. "point query" or
// "table scan".
func (c Class) String() string {
	switch c {
	case Point:
		return "point query"
	case Range:
		return "range query"
	case PartitionScan:
		return "partition scan"
	case PartitionRange:
		return "partition range scan"
	case TableScan:
		return "table scan"
	case Unknown:
		return "unknown"
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// The reasons Explain gives, in the order a Plan lists them.
const (
	reasonNoFilter       = "no filter: every entity is read"
	reasonPropertiesOnly = "filters only on properties, which have no index"
	reasonRowKeyOnly     = "RowKey without PartitionKey: every partition is searched"
	reasonNoPartitionKey = "no usable PartitionKey condition"
	reasonOrPartitionKey = "or over PartitionKeys (a table scan; run one query per PartitionKey)"
	reasonOrRowKeys      = "or over RowKeys (a partition scan; run one point query per RowKey)"
	reasonNotOverKey     = "not over a key condition"
	reasonKeyNotEqual    = "ne on a key"
	reasonKeyNotString   = "key compared with a value that is not a string"
	reasonKeyNotLiteral  = "key compared with a property, not a value"
	reasonNoRowKey       = "no usable RowKey condition: the whole partition is read"
	reasonTimestamp      = "filters on Timestamp, which has no index"
	reasonPartitionRange = "PartitionKey range: every partition in it is read"
	reasonContradiction  = "a key must equal two different values: matches nothing"
)

// KeyBound is one end of a key range.
type KeyBound struct {
	// Key is the bound's value.
	Key string
	// Inclusive is true for ge/le, false for gt/lt.
	Inclusive bool
}

// KeyRange is a range of PartitionKeys or RowKeys. A nil bound is open:
// no lower bound starts at the first key, no upper bound runs to the end.
type KeyRange struct {
	Lower, Upper *KeyBound
}

// Prefix reports whether r is exactly the keys that start with a prefix, as
// tablekit.RowKeyPrefix builds it (ge prefix, lt [keys.PrefixEnd](prefix)),
// and returns the prefix.
func (r KeyRange) Prefix() (string, bool) {
	if r.Lower == nil || !r.Lower.Inclusive || r.Lower.Key == "" {
		return "", false
	}
	end, ok := keys.PrefixEnd(r.Lower.Key)
	if !ok {
		return r.Lower.Key, r.Upper == nil
	}
	if r.Upper == nil || r.Upper.Inclusive || r.Upper.Key != end {
		return "", false
	}
	return r.Lower.Key, true
}

// String returns r in interval notation, e.g. ["S", "T") or ("a", …), or
// prefix "S" for a prefix range.
func (r KeyRange) String() string {
	if p, ok := r.Prefix(); ok {
		return "prefix " + quote(p)
	}
	var b strings.Builder
	if r.Lower == nil {
		b.WriteString("(…")
	} else {
		if r.Lower.Inclusive {
			b.WriteByte('[')
		} else {
			b.WriteByte('(')
		}
		b.WriteString(quote(r.Lower.Key))
	}
	b.WriteString(", ")
	if r.Upper == nil {
		b.WriteString("…)")
	} else {
		b.WriteString(quote(r.Upper.Key))
		if r.Upper.Inclusive {
			b.WriteByte(']')
		} else {
			b.WriteByte(')')
		}
	}
	return b.String()
}

// Plan is what [Explain] finds out about a filter: the class of query it
// makes, the keys or key ranges the service can use, the properties tested
// entity by entity, and why it is less efficient than it could be. Its
// String is one line, fit for logs; as a log/slog value it is a group of
// fields (class, the keys or ranges, properties, reason).
type Plan struct {
	// Class is the kind of query.
	Class Class
	// PartitionKey is the one partition read, set when Class is Point,
	// Range or PartitionScan ("" is a valid PartitionKey).
	PartitionKey string
	// RowKey is the entity read, set when Class is Point.
	RowKey string
	// RowKeys is the RowKey range read, set when Class is Range.
	RowKeys KeyRange
	// PartitionKeys is the PartitionKey range read, set when Class is
	// PartitionRange.
	PartitionKeys KeyRange
	// Properties are the other properties the filter tests (Timestamp
	// included), each once, in order of appearance.
	Properties []string
	// Reasons say, for people, what makes the query less efficient than a
	// point or range query (see the package doc); none for a point or
	// range query without surprises.
	Reasons []string
	// Err says why the filter could not be parsed, when Class is Unknown;
	// for tablekit.Filter.Explain it may be the error the Filter carries.
	Err error
}

// IsTableScan reports whether the plan is a table scan or could be one
// (Unknown): what tablekit's TableScanPolicy governs.
func (p Plan) IsTableScan() bool { return p.Class == TableScan || p.Class == Unknown }

// String returns the plan on one line: the class, the keys or ranges,
// the properties tested and the reasons, e.g.
//
//	range query: PartitionKey "Sales", RowKey ["S", "T")
//	table scan: filters LastName; filters only on properties, which have no index
func (p Plan) String() string {
	var b strings.Builder
	b.WriteString(p.Class.String())
	switch p.Class {
	case Point:
		b.WriteString(": PartitionKey " + quote(p.PartitionKey) + ", RowKey " + quote(p.RowKey))
	case Range:
		b.WriteString(": PartitionKey " + quote(p.PartitionKey) + ", RowKey " + p.RowKeys.String())
	case PartitionScan:
		b.WriteString(": PartitionKey " + quote(p.PartitionKey))
	case PartitionRange:
		b.WriteString(": PartitionKey " + p.PartitionKeys.String())
	}
	sep := ": "
	if p.Class <= PartitionRange {
		sep = "; "
	}
	if len(p.Properties) > 0 {
		b.WriteString(sep + "filters " + strings.Join(p.Properties, ", "))
		sep = "; "
	}
	if p.Class == Unknown {
		b.WriteString(sep + "filter not understood")
		sep = "; "
	}
	if r := p.reasonText(); r != "" {
		b.WriteString(sep + r)
	}
	return b.String()
}

// reasonText returns the reasons and the error, joined with "; ".
func (p Plan) reasonText() string {
	parts := p.Reasons
	if p.Err != nil {
		parts = append(parts[:len(parts):len(parts)], p.Err.Error())
	}
	return strings.Join(parts, "; ")
}

// LogValue makes a Plan a group of structured fields in [log/slog]:
// class, the keys or ranges, properties and reason (the reasons and the
// error, joined with "; ").
func (p Plan) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("class", p.Class.String())}
	switch p.Class {
	case Point:
		attrs = append(attrs, slog.String("partition_key", p.PartitionKey), slog.String("row_key", p.RowKey))
	case Range:
		attrs = append(attrs, slog.String("partition_key", p.PartitionKey), slog.String("row_keys", p.RowKeys.String()))
	case PartitionScan:
		attrs = append(attrs, slog.String("partition_key", p.PartitionKey))
	case PartitionRange:
		attrs = append(attrs, slog.String("partition_keys", p.PartitionKeys.String()))
	}
	if len(p.Properties) > 0 {
		attrs = append(attrs, slog.String("properties", strings.Join(p.Properties, ",")))
	}
	if r := p.reasonText(); r != "" {
		attrs = append(attrs, slog.String("reason", r))
	}
	return slog.GroupValue(attrs...)
}

// quote quotes s for a message, shortening very long values.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
