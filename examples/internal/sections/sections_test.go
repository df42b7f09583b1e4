package sections_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
	"github.com/tablekit/tablekit/internal/testenv"
)

// narration lists, per section, lines its narration must contain: each one
// states a result of the pattern (counts, order, costs), so a section that
// runs but shows the wrong thing fails.
var narration = []struct {
	section demo.Section
	want    []string
}{
	{sections.Archive(), []string{
		`a message is base64 JSON, as Azure Functions expects: {"kind":"archive.move","payload":{"pk":"Sales","rk":"000123"}}`,
		"then deleted each message: Current: [000223 000224 000301], Archive: [000123 000124]",
		"for a moment it is in Current and Archive",
		"finished the move: it is in Archive",
		`a message of unknown kind "archive.purge" failed permanently and went to <queue>-poison after 1 attempt(s)`,
		"5 received, 3 handled, 2 failed attempts, 1 poisoned; Current: [000224 000301], Archive: [000123 000124 000223]",
	}},
	{sections.Tracing(), []string{
		"Worker.Handle (internal) tablekit.message_kind=archive.move tablekit.dequeue_count=1",
		"    Mover.Move (internal) tablekit.row_key=000123",
		"        Mover.Read (internal)",
		"        Mover.WriteArchive (internal)",
		"        Mover.DeleteCurrent (internal)",
		"(client)",
	}},
	{sections.IndexEntities(), []string{
		"the Joneses of Sales: one point query for the index entity gives [000123 000200 000223]",
		`stores IDs="000123\n000200\n000223" and Count=3`,
		"moves her id: Jones [000200 000223], Hall [000123 000152]",
		"once caught up, the Jones index entity of Sales lists [000123 000200 000223]",
		"the blob surname/Jones lists every Jones: [Marketing/000150 Sales/000123 Sales/000200 Sales/000223]",
		"after the worker ran, Jones [000200 000223] and Hall [000123 000152]",
	}},
	{sections.SecondaryIndex(), []string{
		"inserted 7 employees, each with its 3 index copies in ONE entity group transaction: 7 requests (table: Transaction=7)",
		"by email jonesj@contoso.com: Jon Jones, id 000223, age 34 (a point query: 1 transaction)",
		`emails starting with "a" in Sales, in email order: [000100 Adam Barr <adamb@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>]`,
		"ids 000100 to 000199 in Sales, one range query: [000100 Adam Barr <adamb@contoso.com>, 000123 Lisa Jones <lisaj@contoso.com>, 000152 Don Hall <donh@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>]",
		"Joneses in Sales, from the projected index (names only): [000123 Lisa Jones, 000200 Amy Jones, 000223 Jon Jones]",
		"in one transaction (1), guarded by the ETag",
		"by the old email now: []",
		"refused: ErrPreconditionFailed",
		"by email in partition email!Sales: Jon Jones (id 000223)",
		`emails starting with "a" across all departments, from the global index: [000100 Adam Barr <adamb@contoso.com>, 000150 Bea Jones <aj@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>]`,
		"the old one gives []",
	}},
	{sections.DataSeries(), []string{
		`H09=100, H17=42 (1 request (table: GetEntity=1))`,
		`does not fit one entity`,
	}},
	{sections.Denormalization(), []string{
		`managed by Ann Jones <ann.jones@contoso.com> (1 request (table: GetEntity=1))`,
		`in one entity group transaction, so no reader sees them disagree: 1 request (table: Transaction=1)`,
		`ResourceNotFound`,
	}},
	{sections.Heterogeneous(), []string{
		`Employee v2 000101: Bob Smith`,
		`unregistered kind Goal.v1`,
		`one query decoded the mixed partition, each row into its own type: 1 request`,
		`one entity group transaction: 1 request (table: Transaction=1)`,
		`prefix range query: [Employee!000100=Ann Jones`,
	}},
	{sections.HighVolumeDelete(), []string{
		`DeleteTable=2 QueryTables=1`,
		`reads 901 logins`,
	}},
	{sections.LargeEntities(), []string{
		`PutBlob=2`,
		`Get read the entity and both blobs, concurrently: 3 requests (table: GetEntity=1; blob: GetBlob=2)`,
		`Get with SkipBlobs reads only the entity (Name "Ada", Bio 0 chars): 1 request`,
		`deleted the orphan`,
		`DeleteBlob=2`,
	}},
	{sections.ShardedStream(), []string{
		`appended 2000 events`,
		`merges them: 40 events, click-00400`,
		`QueryEntities=8`,
	}},
	{sections.WideEntities(), []string{
		`"emp000223!002"`,
		`Get reassembled 600 properties: 1 request (table: QueryEntities=1)`,
		`rewrites the one holding it and part 0, which holds the version every write is conditional on: 2 requests (table: QueryEntities=1 Transaction=1)`,
		`D001..D365: 2 physical entities`,
		`nothing is sent`,
	}},
}

// TestSections runs every section of the tour against the test account and
// checks its narration.
func TestSections(t *testing.T) {
	tested := map[string]bool{}
	for _, c := range narration {
		tested[c.section.Name] = true
		t.Run(c.section.Name, func(t *testing.T) {
			var buf bytes.Buffer
			env := demo.NewEnv(testenv.Account(t, nil), &buf)
			env.Reopen = func(o *tablekit.Options) (*tablekit.Account, error) {
				return tablekit.Open(testenv.ConnectionString(t), o)
			}
			err := demo.RunSection(context.Background(), env, c.section)
			t.Log("\n" + buf.String())
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range c.want {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("narration lacks %q", want)
				}
			}
		})
	}
	for _, s := range sections.All() {
		if !tested[s.Name] {
			t.Errorf("section %s of the tour has no test", s.Name)
		}
	}
}
