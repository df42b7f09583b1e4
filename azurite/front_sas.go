package azurite

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The PartitionKey/RowKey range of a table service SAS ("Create a service
// SAS": spk, srk, epk, erk; "Table queries only return results that are
// within the range, and attempts to use the shared access signature to
// add, update, or delete entities outside this range will fail").
//
// What the front assumes where the documentation is silent:
//   - the range is one of composite keys: (PartitionKey, RowKey) from
//     (spk, srk) to (epk, erk), both inclusive, in the service's key order
//     (UTF-16 code units); a missing srk is the smallest row key, a
//     missing erk the largest;
//   - an insert, update, merge, upsert or delete outside it gets 403
//     AuthorizationFailure, and a point read outside it 404
//     ResourceNotFound (both recorded: FIDELITY.md);
//   - a query is narrowed to the range (its $filter is and-ed with the
//     range), so it returns only entities inside it;
//   - a batch with an action outside it fails as a whole, the failing
//     action answered 403 AuthorizationFailure inside the changeset
//     response with its index ("2:This request is not authorized...").
//
// Azurite itself checks the token's signature (over the range too) and
// its permissions, so the front only adds the range.

const msgAuthorizationFailure = "This request is not authorized to perform this operation."

// sasRange is the key range of a table SAS.
type sasRange struct {
	spk, srk, epk, erk string
	hasSPK, hasSRK     bool
	hasEPK, hasERK     bool
}

// parseSASRange returns the key range of a signed request's table SAS, or
// nil when the request has no SAS or the SAS no range.
func parseSASRange(q url.Values) *sasRange {
	if q.Get("sig") == "" {
		return nil
	}
	var s sasRange
	s.spk, s.hasSPK = value(q, "spk")
	s.srk, s.hasSRK = value(q, "srk")
	s.epk, s.hasEPK = value(q, "epk")
	s.erk, s.hasERK = value(q, "erk")
	if !s.bounded() {
		return nil
	}
	return &s
}

func value(q url.Values, k string) (string, bool) {
	v, ok := q[k]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// bounded reports whether the range restricts anything.
func (s *sasRange) bounded() bool {
	return s.hasSPK || s.hasSRK || s.hasEPK || s.hasERK
}

// compareKeys compares two keys in the service's order: by UTF-16 code
// units.
func compareKeys(a, b string) int {
	if a == b {
		return 0
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			if ua[i] < ub[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(ua) < len(ub):
		return -1
	case len(ua) > len(ub):
		return 1
	}
	return strings.Compare(a, b)
}

// contains reports whether the entity (pk, rk) is inside the range.
func (s *sasRange) contains(pk, rk string) bool {
	if s.hasSPK || s.hasSRK {
		c := compareKeys(pk, s.spk)
		if c < 0 || (c == 0 && s.hasSRK && compareKeys(rk, s.srk) < 0) {
			return false
		}
	}
	if s.hasEPK {
		c := compareKeys(pk, s.epk)
		if c > 0 || (c == 0 && s.hasERK && compareKeys(rk, s.erk) > 0) {
			return false
		}
	} else if s.hasERK {
		// A row key bound without a partition key bound: Azure requires
		// epk with erk; read it as a bound on every partition's row keys.
		if compareKeys(rk, s.erk) > 0 {
			return false
		}
	}
	return true
}

// odataString quotes s as an OData string literal.
func odataString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// narrow returns filter and-ed with the range's condition.
func (s *sasRange) narrow(filter string) string {
	var conds []string
	if s.hasSPK || s.hasSRK {
		if s.hasSRK {
			conds = append(conds, "(PartitionKey gt "+odataString(s.spk)+" or (PartitionKey eq "+odataString(s.spk)+" and RowKey ge "+odataString(s.srk)+"))")
		} else {
			conds = append(conds, "PartitionKey ge "+odataString(s.spk))
		}
	}
	switch {
	case s.hasEPK && s.hasERK:
		conds = append(conds, "(PartitionKey lt "+odataString(s.epk)+" or (PartitionKey eq "+odataString(s.epk)+" and RowKey le "+odataString(s.erk)+"))")
	case s.hasEPK:
		conds = append(conds, "PartitionKey le "+odataString(s.epk))
	case s.hasERK:
		conds = append(conds, "RowKey le "+odataString(s.erk))
	}
	cond := strings.Join(conds, " and ")
	if strings.TrimSpace(filter) == "" {
		return cond
	}
	return "(" + filter + ") and " + cond
}

// indexed prefixes a batch error message with the failing action's index.
func indexed(i int, msg string) string {
	return strconv.Itoa(i) + ":" + msg
}
