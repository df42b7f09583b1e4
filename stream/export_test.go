package stream

import "github.com/tablekit/tablekit"

// TableOf returns the table of s, for the tests' raw checks.
func TableOf(s *Store) *tablekit.Table[tablekit.Entity] { return s.t }
