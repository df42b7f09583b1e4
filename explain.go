package tablekit

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/keys"
)

// QueryClass is the kind of query a filter makes, in the terms of
// Microsoft's table design guide ("Design for querying"): from the cheapest,
// a point query, a range query and a partition scan read one partition; a
// partition range scan reads the partitions of a PartitionKey range; a
// table scan reads every partition in turn.
type QueryClass uint8

// The query classes, from the most to the least efficient.
const (
	// ClassPoint reads one entity: PartitionKey eq pk and RowKey eq rk.
	ClassPoint QueryClass = iota + 1
	// ClassRange reads a RowKey range (or prefix) of one partition:
	// PartitionKey eq pk and RowKey bounded by ge/gt/lt/le.
	ClassRange
	// ClassPartitionScan reads every entity of one partition: PartitionKey
	// eq pk without a usable RowKey condition (other properties are tested
	// entity by entity).
	ClassPartitionScan
	// ClassPartitionRange reads the partitions of a PartitionKey range
	// (PartitionKey ge/gt/lt/le, no PartitionKey equality), as
	// [PartitionRange] builds.
	ClassPartitionRange
	// ClassTableScan reads every partition of the table in turn: no
	// PartitionKey equality or range the service can use.
	ClassTableScan
	// ClassUnknown is a filter Explain cannot parse (see Plan.Err). A query
	// with it is treated as a possible table scan.
	ClassUnknown
)

// String returns the guide's name of the class, e.g. "point query" or
// "table scan".
func (c QueryClass) String() string {
	switch c {
	case ClassPoint:
		return "point query"
	case ClassRange:
		return "range query"
	case ClassPartitionScan:
		return "partition scan"
	case ClassPartitionRange:
		return "partition range scan"
	case ClassTableScan:
		return "table scan"
	case ClassUnknown:
		return "unknown"
	}
	return "QueryClass(" + strconv.Itoa(int(c)) + ")"
}

// Reason says why a filter makes a less efficient query than it could:
// what turns it into a scan, or what it does that the service cannot use.
// The constants are the complete set; compare with ==.
type Reason string

// The reasons [Filter.Explain] gives.
const (
	// ReasonNoFilter: the zero Filter reads every entity of the table.
	ReasonNoFilter Reason = "no filter: every entity is read"
	// ReasonPropertiesOnly: the filter names no key, only properties,
	// which have no index.
	ReasonPropertiesOnly Reason = "filters only on properties, which have no index"
	// ReasonRowKeyOnly: RowKey without PartitionKey; every partition is
	// searched in turn, RowKey or not (the guide says so).
	ReasonRowKeyOnly Reason = "RowKey without PartitionKey: every partition is searched"
	// ReasonNoPartitionKey: no PartitionKey equality or range the service
	// can use (see the other reasons for what defeats one).
	ReasonNoPartitionKey Reason = "no usable PartitionKey condition"
	// ReasonOrPartitionKeys: an or over PartitionKeys; the service scans
	// the table instead of reading each partition (run one query per
	// PartitionKey instead).
	ReasonOrPartitionKeys Reason = "or over PartitionKeys (a table scan; run one query per PartitionKey)"
	// ReasonOrRowKeys: an or over RowKeys; the guide says the service scans
	// the partition instead of reading a range (run one point query per
	// RowKey instead).
	ReasonOrRowKeys Reason = "or over RowKeys (a partition scan; run one point query per RowKey)"
	// ReasonNotOverKey: a key condition under not, which no index serves.
	ReasonNotOverKey Reason = "not over a key condition"
	// ReasonKeyNotEqual: ne on a key, which no index serves.
	ReasonKeyNotEqual Reason = "ne on a key"
	// ReasonKeyNotString: a key compared with a literal that is not a
	// string (keys are strings: such a comparison matches nothing).
	ReasonKeyNotString Reason = "key compared with a value that is not a string"
	// ReasonKeyNotLiteral: a key compared with a property or the other key
	// rather than a value.
	ReasonKeyNotLiteral Reason = "key compared with a property, not a value"
	// ReasonNoRowKey: one partition, but no usable RowKey condition: the
	// whole partition is read.
	ReasonNoRowKey Reason = "no usable RowKey condition: the whole partition is read"
	// ReasonTimestamp: a condition on Timestamp, which has no index.
	ReasonTimestamp Reason = "filters on Timestamp, which has no index"
	// ReasonPartitionRange: a PartitionKey range reads every partition in
	// it.
	ReasonPartitionRange Reason = "PartitionKey range: every partition in it is read"
	// ReasonContradiction: a key is required to equal two different values,
	// so the filter matches nothing.
	ReasonContradiction Reason = "a key must equal two different values: matches nothing"
	// ReasonUnparsed: the filter could not be parsed (see Plan.Err).
	ReasonUnparsed Reason = "filter not understood"
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

// IsZero reports whether r has no bound.
func (r KeyRange) IsZero() bool { return r.Lower == nil && r.Upper == nil }

// Prefix reports whether r is exactly the keys that start with a prefix, as
// [RowKeyPrefix] builds it (ge prefix, lt [keys.PrefixEnd](prefix)), and
// returns the prefix.
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
		return "prefix " + quoteForError(p)
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
		b.WriteString(quoteForError(r.Lower.Key))
	}
	b.WriteString(", ")
	if r.Upper == nil {
		b.WriteString("…)")
	} else {
		b.WriteString(quoteForError(r.Upper.Key))
		if r.Upper.Inclusive {
			b.WriteByte(']')
		} else {
			b.WriteByte(')')
		}
	}
	return b.String()
}

// Plan is what [Filter.Explain] finds out about a filter before anything is
// sent: the class of query it makes, the keys or key ranges the service
// can use, the properties tested entity by entity, and the reasons it is
// less efficient than it could be. Its String is one line, fit for logs.
type Plan struct {
	// Class is the kind of query.
	Class QueryClass
	// PartitionKey is the one partition read, set when Class is ClassPoint,
	// ClassRange or ClassPartitionScan ("" is a valid PartitionKey).
	PartitionKey string
	// RowKey is the entity read, set when Class is ClassPoint.
	RowKey string
	// RowKeys is the RowKey range read, set when Class is ClassRange.
	RowKeys KeyRange
	// PartitionKeys is the PartitionKey range read, set when Class is
	// ClassPartitionRange.
	PartitionKeys KeyRange
	// Properties are the other properties the filter tests (Timestamp
	// included), each once, in order of appearance.
	Properties []string
	// Reasons say what makes the query less efficient than a point or
	// range query; none for a point or range query without surprises.
	Reasons []Reason
	// Err says why the filter could not be parsed, when Class is
	// ClassUnknown; it may be the error the Filter carries.
	Err error
}

// IsTableScan reports whether the plan is a table scan or could be one
// (ClassUnknown): what [TableOptions].TableScans governs.
func (p Plan) IsTableScan() bool { return p.Class == ClassTableScan || p.Class == ClassUnknown }

// HasReason reports whether r is one of p's reasons.
func (p Plan) HasReason(r Reason) bool {
	for _, x := range p.Reasons {
		if x == r {
			return true
		}
	}
	return false
}

// String returns the plan on one line: the class, the keys or ranges,
// the properties tested and the reasons, e.g.
//
//	range query: PartitionKey "Sales", RowKey ["S", "T")
//	table scan: filters LastName; filters only on properties, which have no index
func (p Plan) String() string {
	var b strings.Builder
	b.WriteString(p.Class.String())
	switch p.Class {
	case ClassPoint:
		b.WriteString(": PartitionKey " + quoteForError(p.PartitionKey) + ", RowKey " + quoteForError(p.RowKey))
	case ClassRange:
		b.WriteString(": PartitionKey " + quoteForError(p.PartitionKey) + ", RowKey " + p.RowKeys.String())
	case ClassPartitionScan:
		b.WriteString(": PartitionKey " + quoteForError(p.PartitionKey))
	case ClassPartitionRange:
		b.WriteString(": PartitionKey " + p.PartitionKeys.String())
	}
	sep := ": "
	if p.Class <= ClassPartitionRange {
		sep = "; "
	}
	if len(p.Properties) > 0 {
		b.WriteString(sep + "filters " + strings.Join(p.Properties, ", "))
		sep = "; "
	}
	for _, r := range p.Reasons {
		b.WriteString(sep + string(r))
		sep = "; "
	}
	if p.Err != nil {
		b.WriteString(sep + p.Err.Error())
	}
	return b.String()
}

// ReasonText returns the reasons joined with "; " ("" for none), and the
// parse error when there is one.
func (p Plan) ReasonText() string {
	parts := make([]string, 0, len(p.Reasons)+1)
	for _, r := range p.Reasons {
		parts = append(parts, string(r))
	}
	if p.Err != nil {
		parts = append(parts, p.Err.Error())
	}
	return strings.Join(parts, "; ")
}

// LogValue makes a Plan a group of structured fields in [log/slog]:
// class, the keys or ranges, properties and reason.
func (p Plan) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("class", p.Class.String())}
	switch p.Class {
	case ClassPoint:
		attrs = append(attrs, slog.String("partition_key", p.PartitionKey), slog.String("row_key", p.RowKey))
	case ClassRange:
		attrs = append(attrs, slog.String("partition_key", p.PartitionKey), slog.String("row_keys", p.RowKeys.String()))
	case ClassPartitionScan:
		attrs = append(attrs, slog.String("partition_key", p.PartitionKey))
	case ClassPartitionRange:
		attrs = append(attrs, slog.String("partition_keys", p.PartitionKeys.String()))
	}
	if len(p.Properties) > 0 {
		attrs = append(attrs, slog.String("properties", strings.Join(p.Properties, ",")))
	}
	if r := p.ReasonText(); r != "" {
		attrs = append(attrs, slog.String("reason", r))
	}
	return slog.GroupValue(attrs...)
}

// Explain classifies the query f makes, without sending anything: a point
// query, a range query (RowKey range or prefix in one partition), a
// partition scan, a partition range scan or a table scan, in the terms of
// the table design guide. It names the keys or ranges the service can use
// and the reasons the query is less efficient than it could be (an or over
// RowKeys or PartitionKeys, a condition on Timestamp or on properties only,
// a missing PartitionKey, a key under not or ne, ...).
//
// It reads f's OData text, so it explains filters built with [Where], [And],
// [Or], [Not] and the key helpers as well as hand-written text passed to
// Where. Text it cannot parse gives ClassUnknown with Plan.Err set; it never
// panics. The zero Filter is a table scan (ReasonNoFilter), and a Filter
// carrying an error gives ClassUnknown with that error.
//
// Explain judges the filter's shape, not the data: a partition scan of a
// small partition is cheap, and a point query for a missing entity finds
// nothing.
func (f Filter) Explain() Plan {
	if f.err != nil {
		return Plan{Class: ClassUnknown, Reasons: []Reason{ReasonUnparsed}, Err: f.err}
	}
	return explainText(f.text)
}
