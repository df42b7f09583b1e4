package main

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	testenv.Narrates(t, out.String(),
		`stored 15 reviews with RowKeys such as "000223!2010" (zero-padded id, then year)`,
		"the partition in RowKey order holds the employees in numeric order: [000223 000224 001000]",
		`range "000223" ≤ RowKey < "000223\"" read employee 000223's reviews for [2010 2011 2012 2013 2014]: {1} transaction`,
		`range "000224!2011" ≤ RowKey < "000224!2014" read employee 000224's reviews for [2011 2012 2013]: {1} transaction`,
		`the raw key "EMEA/17!2014" is refused (`,
		`); the compound key "EMEA.|17!2014" is stored and splits back into ["EMEA/17" "2014"]`,
	)
}

// TestSeparatorEscaped: a component holding the separator stays
// unambiguous, as the example's comment says.
func TestSeparatorEscaped(t *testing.T) {
	k1, err1 := keys.Compound("a!b", "c")
	k2, err2 := keys.Compound("a", "b!c")
	if err1 != nil || err2 != nil || k1 != "a\"eb!c" || k2 != "a!b\"ec" {
		t.Fatalf(`("a!b", "c") is %q (%v), ("a", "b!c") is %q (%v)`, k1, err1, k2, err2)
	}
	if p, err := keys.Split(k1); err != nil || !slices.Equal(p, []string{"a!b", "c"}) {
		t.Fatalf("%q splits into %q (%v)", k1, p, err)
	}
}
