package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"Insert of meter17/2025, Unit and 365 daily readings (366 properties), in one entity group transaction: 1 transaction (Transaction=1)",
		`physical entity RowKey "2025!000": 250 properties (R001..R250) and Wide's bookkeeping (_wide, _wideParts)`,
		`physical entity RowKey "2025!001": 116 properties (R251..R365, Unit) and Wide's bookkeeping (_wide)`,
		"Get reassembled 365 readings, unit kWh: 1 transaction (QueryEntities=1)",
		"Merge of R001 (held by part 0) read the parts and rewrote [2025!000]: 2 transactions (QueryEntities=1 Transaction=1)",
		"Modify of R251 (held by part 1): now 16, rewrote [2025!000 2025!001]: 2 transactions (QueryEntities=1 Transaction=1)",
		"Update conditional on the version Modify returned: 2 transactions (QueryEntities=1 Transaction=1)",
		"refused (ErrPreconditionFailed) and writes nothing: Get reads unit MWh, R251 = 16, version as Update returned it: true",
		"Delete of that version removed every part in one transaction: 2 transactions (QueryEntities=1 Transaction=1); 0 parts left",
		"26280 readings need more than one transaction can hold (100 entities, 4 MiB): refused with ErrTooLarge, 0 transactions sent",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
