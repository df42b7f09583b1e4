package transfer

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// Range is a PartitionKey range [From, To): From inclusive ("" means from
// the start of the table), To exclusive ("" means to the end). Keys compare
// as the service compares them, by UTF-16 code units.
type keyRange struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Filter returns the Range as a filter ("PartitionKey ge From and
// PartitionKey lt To", without the bounds that are "").
func (r keyRange) Filter() tablekit.Filter { return tablekit.PartitionRange(r.From, r.To) }

// contains reports whether pk is in r.
func (r keyRange) contains(pk string) bool {
	return (r.From == "" || compareKeys(pk, r.From) >= 0) && (r.To == "" || compareKeys(pk, r.To) < 0)
}

// String shows the range as [From, To).
func (r keyRange) String() string {
	to := "end"
	if r.To != "" {
		to = fmt.Sprintf("%q", r.To)
	}
	return fmt.Sprintf("[%q, %s)", r.From, to)
}

// Scope says which entities an operation reads: those in Partition (when
// set) or in the PartitionKey range [From, To), that match Filter and, when
// OlderThan is set, were last written before the job's cutoff.
type Scope struct {
	// Filter is an extra OData filter (the zero Filter matches all), for
	// example tablekit.Where("Timestamp lt ?", cutoff).
	Filter tablekit.Filter
	// OlderThan, when positive, limits the scope to entities last written
	// (their Timestamp) more than OlderThan before the job started. The
	// cutoff is fixed by the job's first run: a run with Resume uses the
	// start time recorded in the checkpoint, so that it reads the scope
	// the checkpoint was made for (a cutoff taken from the clock again
	// would be another scope, and the checkpoint would be refused).
	OlderThan time.Duration
	// Partition, when not nil, limits the operation to that one
	// PartitionKey; From and To must then be "".
	Partition *string
	// From and To bound the PartitionKey range [From, To) ("" for no
	// bound).
	From, To string
}

// validate checks the scope before anything is sent.
func (s *Scope) validate(op string) error {
	if err := s.Filter.Err(); err != nil {
		return err
	}
	if s.OlderThan < 0 {
		return validation(op, fmt.Sprintf("Scope.OlderThan is %v; it must not be negative", s.OlderThan))
	}
	for _, k := range []string{s.From, s.To} {
		if !utf8.ValidString(k) {
			return validation(op, "Scope.From and Scope.To must be valid UTF-8")
		}
	}
	if s.Partition != nil {
		if s.From != "" || s.To != "" {
			return validation(op, "Scope.Partition cannot be combined with Scope.From or Scope.To")
		}
		if !utf8.ValidString(*s.Partition) {
			return validation(op, "Scope.Partition must be valid UTF-8")
		}
	}
	if s.From != "" && s.To != "" && compareKeys(s.From, s.To) >= 0 {
		return validation(op, fmt.Sprintf("Scope.From %q must sort before Scope.To %q", s.From, s.To))
	}
	return nil
}

// at returns the scope of a job started at started: OlderThan becomes a
// Timestamp condition of Filter, after the caller's.
func (s Scope) at(started time.Time) Scope {
	if s.OlderThan > 0 {
		s.Filter = tablekit.And(s.Filter, tablekit.Where("Timestamp lt ?", started.Add(-s.OlderThan).UTC()))
		s.OlderThan = 0
	}
	return s
}

// filter returns the filter of the whole scope.
func (s *Scope) filter() tablekit.Filter {
	if s.Partition != nil {
		return tablekit.And(tablekit.PartitionEq(*s.Partition), s.Filter)
	}
	return tablekit.And(keyRange{From: s.From, To: s.To}.Filter(), s.Filter)
}

// describe returns the scope as one filter text, for headers and
// checkpoints.
func (s *Scope) describe() string {
	f := s.filter()
	if f.Err() != nil {
		return ""
	}
	return f.String()
}

// splitRange cuts r at boundaries (sorted, distinct, inside r).
func splitRange(r keyRange, boundaries []string) []keyRange {
	out := make([]keyRange, 0, len(boundaries)+1)
	from := r.From
	for _, b := range boundaries {
		out = append(out, keyRange{From: from, To: b})
		from = b
	}
	return append(out, keyRange{From: from, To: r.To})
}

// checkBoundaries sorts caller-given boundaries in key order, drops those
// outside r and duplicates.
func checkBoundaries(op string, r keyRange, bs []string) ([]string, error) {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		if !utf8.ValidString(b) || b == "" {
			return nil, validation(op, fmt.Sprintf("boundary %q must be a non-empty, valid UTF-8 PartitionKey", b))
		}
		if b == r.From || !r.contains(b) {
			continue
		}
		out = append(out, b)
	}
	slices.SortFunc(out, compareKeys)
	return slices.Compact(out), nil
}

// compareKeys compares keys as the service does: by UTF-16 code units.
var compareKeys = keys.Compare

// maxReported is how many failed or changed entities a result lists (all
// are counted).
const maxReported = 1000

func validation(op, detail string) error {
	return &tablekit.ValidationError{Op: op, Detail: detail, Err: tablekit.ErrInvalidInput}
}
