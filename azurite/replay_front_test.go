package azurite_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/replay"
)

// The front answers as recorded: every exchange of the Go corpus, and of
// the other SDKs' excerpts, is played against package azurite's front
// before a real Azurite (Azure mode for the _storage recordings, Cosmos
// mode for the _cosmos ones), and its answer is compared with the live
// service's: status; the error code and where it is carried (the body
// only); the error message's shape (Table storage's RequestId and Time
// lines, Cosmos DB's RequestID line) and wording; Content-Type of errors
// (and, for Cosmos DB, of every answer but a batch's, and the absence of
// the Server, x-ms-request-id and x-ms-version headers); the continuation
// headers' shape; a batch answer's inner statuses,
// codes, messages and part line ends; and the entities read back, by
// value and EDM type. What cannot agree is in FIDELITY.md, with why.

// frontModes are the front options for each service's recordings.
var frontModes = map[string]*azurite.FrontOptions{
	"storage": {},
	// Live Cosmos DB returned one partition's entities in RowKey order in
	// every recording; the front's default promises no order at all.
	"cosmos": {Cosmos: true, Seed: 1, SortWithinPartition: true},
}

// goCorpus returns the Go corpus's recordings of one service.
func goCorpus(t *testing.T, service string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(replay.Dir(), "aztables-go", "*", "*_"+service+".json"))
	if err != nil || len(paths) != 25 {
		t.Fatalf("%d %s recordings (%v), want 25", len(paths), service, err)
	}
	return paths
}

func TestFrontAnswersAsRecorded(t *testing.T) {
	srv := azurite.StartForTest(t, nil)
	for _, service := range []string{"storage", "cosmos"} {
		front, err := azurite.NewFront(t.Context(), srv.Direct(), frontModes[service])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { front.Close() })
		for _, path := range goCorpus(t, service) {
			name := strings.TrimSuffix(filepath.Base(path), ".json")
			t.Run(name, func(t *testing.T) {
				rec, err := replay.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				p := newPlayer(t, front.Endpoints().Table)
				for i, e := range rec.Entries {
					a := p.play(e)
					for _, d := range compareAnswer(service, e, a) {
						t.Errorf("entry %d (%s %s): %s", i, e.Method, e.URL.Path, d)
					}
				}
			})
		}
	}
	t.Run("others", func(t *testing.T) { testOthers(t, srv) })
}

var (
	guid          = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`
	storageTail   = regexp.MustCompile(`\nRequestId:` + guid + `\nTime:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$`)
	cosmosTail    = regexp.MustCompile(`(\r\nActivityId: ` + guid + `, documentdb-dotnet-sdk/2\.14\.0 Host/64-bit MicrosoftWindowsNT/10\.0\.20348\.0)?\nRequestID:` + guid + `\n$`)
	storageToken  = regexp.MustCompile(`^1!\d+![A-Za-z0-9+/]+-*$`)
	cosmosTokenRE = regexp.MustCompile(`^\{"token":"[A-Za-z0-9+/=#:~!-]+","range":\{"min":"","max":"FF"\}\}$`)
)

// messageText is an error message without its request id and time.
func messageText(service, msg string) (string, bool) {
	tail := storageTail
	if service == "cosmos" {
		tail = cosmosTail
	}
	loc := tail.FindStringIndex(msg)
	if loc == nil {
		return msg, false
	}
	return msg[:loc[0]], true
}

// compareAnswer lists how the front's answer a differs from the recorded
// answer of e.
func compareAnswer(service string, e replay.Entry, a answer) []string {
	var diffs []string
	if a.Status != e.Status {
		return []string{fmt.Sprintf("status %d, want %d: %s", a.Status, e.Status, a.Body)}
	}
	if h := a.Header.Get("x-ms-error-code"); h != "" {
		diffs = append(diffs, "an x-ms-error-code header ("+h+"); the live service sends none")
	}
	if e.Status >= 400 {
		return append(diffs, compareError(service, e.ResponseHeader.Get("Content-Type"), e.ResponseBody, a.Header.Get("Content-Type"), a.Body, false)...)
	}
	for _, k := range []string{"x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey"} {
		w, g := e.ResponseHeader.Get(k), a.Header.Get(k)
		if (w == "") != (g == "") {
			diffs = append(diffs, fmt.Sprintf("%s %q, recorded %q", k, g, w))
		}
		if g != "" && !tokenShaped(service, k, g) {
			diffs = append(diffs, fmt.Sprintf("%s %q is not shaped as %s's", k, g, service))
		}
	}
	if (e.ResponseHeader.Get("ETag") == "") != (a.Header.Get("ETag") == "") {
		diffs = append(diffs, fmt.Sprintf("ETag %q, recorded %q", a.Header.Get("ETag"), e.ResponseHeader.Get("ETag")))
	}
	ct := e.ResponseHeader.Get("Content-Type")
	if service == "cosmos" {
		// What tablekit may read to tell Cosmos DB from Table storage.
		if g := a.Header.Get("Content-Type"); g != ct && !strings.HasPrefix(ct, "multipart/") {
			diffs = append(diffs, fmt.Sprintf("Content-Type %q, recorded %q", g, ct))
		}
		for _, k := range []string{"Server", "x-ms-request-id", "x-ms-version"} {
			if g := a.Header.Get(k); g != "" {
				diffs = append(diffs, fmt.Sprintf("%s %q; Cosmos DB sends none", k, g))
			}
		}
	}
	switch {
	case strings.HasPrefix(ct, "multipart/"):
		diffs = append(diffs, compareBatch(service, e, a)...)
	case e.Method == http.MethodGet && !replay.IsTableAdmin(e.URL) && len(e.ResponseBody) > 0:
		diffs = append(diffs, compareEntities(e.ResponseBody, a.Body)...)
	}
	return diffs
}

func tokenShaped(service, header, v string) bool {
	if service == "cosmos" {
		if strings.HasSuffix(header, "NextRowKey") {
			return v == "NA"
		}
		return cosmosTokenRE.MatchString(v)
	}
	return storageToken.MatchString(v)
}

// compareError compares two OData errors: code, message wording and
// shape, and Content-Type.
func compareError(service, wantType string, want []byte, gotType string, got []byte, inBatch bool) []string {
	var diffs []string
	if w, g := replay.ErrorCode(want), replay.ErrorCode(got); w != g {
		return []string{fmt.Sprintf("error code %q, want %q: %s", g, w, got)}
	}
	wm, _ := messageText(service, replay.ErrorMessage(want))
	gm, shaped := messageText(service, replay.ErrorMessage(got))
	if inBatch && service == "cosmos" {
		// "2:The specified entity already exists.\n\nRequestID:...\n"
		wm, gm = strings.TrimSuffix(wm, "\n"), strings.TrimSuffix(gm, "\n")
	}
	if !shaped {
		diffs = append(diffs, fmt.Sprintf("message %q is not shaped as %s's", replay.ErrorMessage(got), service))
	}
	if wm != gm {
		diffs = append(diffs, fmt.Sprintf("message %q, want %q", gm, wm))
	}
	if wl, gl := lang(want), lang(got); wl != gl {
		diffs = append(diffs, fmt.Sprintf("lang %q, want %q", gl, wl))
	}
	if wantType != gotType {
		diffs = append(diffs, fmt.Sprintf("Content-Type %q, want %q", gotType, wantType))
	}
	return diffs
}

func lang(body []byte) string {
	var e struct {
		Err struct {
			Message struct {
				Lang string `json:"lang"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	json.Unmarshal(body, &e)
	return e.Err.Message.Lang
}

// compareBatch compares two batch answers part by part.
func compareBatch(service string, e replay.Entry, a answer) []string {
	w, err := replay.BatchResponses(e.ResponseHeader.Get("Content-Type"), e.ResponseBody)
	if err != nil {
		return []string{"the recorded batch answer: " + err.Error()}
	}
	g, err := replay.BatchResponses(a.Header.Get("Content-Type"), a.Body)
	if err != nil {
		return []string{"the batch answer: " + err.Error()}
	}
	if len(w) != len(g) {
		return []string{fmt.Sprintf("%d inner responses, want %d: %s", len(g), len(w), a.Body)}
	}
	var diffs []string
	for i := range w {
		if w[i].Status != g[i].Status {
			diffs = append(diffs, fmt.Sprintf("action %d: status %d, want %d", i, g[i].Status, w[i].Status))
			continue
		}
		if w[i].PartHeaderLF != g[i].PartHeaderLF && !e.ResponseLines {
			diffs = append(diffs, fmt.Sprintf("action %d: part headers end in bare LF: %v, want %v", i, g[i].PartHeaderLF, w[i].PartHeaderLF))
		}
		if w[i].Status >= 300 {
			for _, d := range compareError(service, w[i].Header.Get("Content-Type"), w[i].Body, g[i].Header.Get("Content-Type"), g[i].Body, true) {
				diffs = append(diffs, fmt.Sprintf("action %d: %s", i, d))
			}
		} else if (w[i].Header.Get("ETag") == "") != (g[i].Header.Get("ETag") == "") {
			diffs = append(diffs, fmt.Sprintf("action %d: ETag %q, recorded %q", i, g[i].Header.Get("ETag"), w[i].Header.Get("ETag")))
		}
		if (w[i].Header.Get("Content-ID") == "") != (g[i].Header.Get("Content-ID") == "") {
			diffs = append(diffs, fmt.Sprintf("action %d: Content-ID %q, recorded %q", i, g[i].Header.Get("Content-ID"), w[i].Header.Get("Content-ID")))
		}
	}
	return diffs
}

// compareEntities compares the entities of two answers (one entity, or a
// page of them) by value and type, in order when a page holds one
// partition (Cosmos DB keeps no order across partitions).
func compareEntities(want, got []byte) []string {
	ws, err := entitiesOf(want)
	if err != nil {
		return []string{"the recorded answer: " + err.Error()}
	}
	gs, err := entitiesOf(got)
	if err != nil {
		return []string{"the answer: " + err.Error()}
	}
	if len(ws) != len(gs) {
		return []string{fmt.Sprintf("%d entities, want %d", len(gs), len(ws))}
	}
	var diffs []string
	for i := range ws {
		if d := replay.DiffEntities(ws[i], gs[i]); d != "" {
			diffs = append(diffs, fmt.Sprintf("entity %d: %s", i, d))
		}
	}
	return diffs
}

func entitiesOf(body []byte) ([]map[string]replay.Property, error) {
	var doc struct {
		Value *[]json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	raws := []json.RawMessage{body}
	if doc.Value != nil {
		raws = *doc.Value
	}
	var out []map[string]replay.Property
	for _, r := range raws {
		p, err := replay.Normalize(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b map[string]replay.Property) int {
		return strings.Compare(a["PartitionKey"].Value+"\x00"+a["RowKey"].Value, b["PartitionKey"].Value+"\x00"+b["RowKey"].Value)
	})
	return out, nil
}

// testOthers plays the Python and .NET SDKs' excerpts, after the setup
// their omitted entries did (creating the table and its entities), with a
// SAS signed here for the recorded ranges.
func testOthers(t *testing.T, srv *azurite.Server) {
	fronts := map[string]*azurite.Front{}
	for service, opts := range frontModes {
		f, err := azurite.NewFront(t.Context(), srv.Direct(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		fronts[service] = f
	}
	cases := []struct {
		file, service, table string
		setup                []string // entity bodies inserted first
		sas                  *sasSpec
	}{
		{file: "net_ValidateSasCredentialsWithRowKeyAndPartitionKeyRanges.json", service: "storage", table: "testtableodf97c7l",
			setup: []string{
				`{"PartitionKey":"somPartition","RowKey":"01","SomeStringProperty":"This is table entity number 01","SomeDateProperty":"2020-01-01T01:02:00.0000000Z","SomeDateProperty@odata.type":"Edm.DateTime","SomeGuidProperty":"0d391d16-97f1-4b9a-be68-4cc871f90001","SomeGuidProperty@odata.type":"Edm.Guid","SomeBinaryProperty":"AQIDBAU=","SomeBinaryProperty@odata.type":"Edm.Binary","SomeInt64Property":"1","SomeInt64Property@odata.type":"Edm.Int64","SomeDoubleProperty0":1,"SomeDoubleProperty0@odata.type":"Edm.Double","SomeDoubleProperty1":1.5,"SomeDoubleProperty1@odata.type":"Edm.Double","SomeIntProperty":1}`,
				`{"PartitionKey":"somPartition","RowKey":"02","SomeStringProperty":"This is table entity number 02"}`,
			},
			sas: &sasSpec{perms: aztables.SASPermissions{Read: true}, rng: [4]string{"somPartition", "01", "somPartition", "01"}}},
		{file: "python_test_sas_add_outside_range.json", service: "storage", table: "uttablebabf292d",
			sas: &sasSpec{perms: aztables.SASPermissions{Add: true}, rng: [4]string{"test", "test1", "test", "test1"}}},
		{file: "python_test_encoder_create_entity_atypical_values_storage.json", service: "storage", table: "uttable06c2c22e09"},
		{file: "python_test_encoder_create_entity_atypical_values_cosmos.json", service: "cosmos", table: "uttable0655fc3370"},
		{file: "python_test_batch_update_if_doesnt_match_cosmos.json", service: "cosmos", table: "uttablee6713031",
			setup: []string{`{"PartitionKey":"pke6713031","RowKey":"rke6713031","age":39,"sex":"male"}`}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".json"), func(t *testing.T) {
			rec, err := replay.Load(filepath.Join("others", c.file))
			if err != nil {
				t.Fatal(err)
			}
			f := fronts[c.service]
			p := newPlayer(t, f.Endpoints().Table)
			base := "https://" + c.service + ".example/"
			mustPlay := func(method, path, body string) {
				u, _ := url.Parse(base + path)
				e := replay.Entry{Method: method, URL: u, RequestBody: []byte(body), ResponseHeader: http.Header{},
					RequestHeader: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json;odata=minimalmetadata"}, "Dataserviceversion": {"3.0"}}}
				if a := p.play(e); a.Status >= 300 {
					t.Fatalf("setup %s %s: %d %s", method, path, a.Status, a.Body)
				}
			}
			mustPlay(http.MethodPost, "Tables", `{"TableName":"`+c.table+`"}`)
			for _, body := range c.setup {
				mustPlay(http.MethodPost, c.table, body)
			}
			if c.sas != nil {
				p.sas = c.sas.sign(t, p.fresh(c.table))
			}
			for i, e := range rec.Entries {
				a := p.play(e)
				for _, d := range compareAnswer(c.service, e, a) {
					t.Errorf("entry %d (%s %s): %s", i, e.Method, e.URL.Path, d)
				}
			}
		})
	}
}

// sasSpec is a table SAS to sign for a recording.
type sasSpec struct {
	perms aztables.SASPermissions
	rng   [4]string // spk, srk, epk, erk
}

// sign returns the SAS query for table, signed with Azurite's key: the
// range is added to the query, which aztables signs but leaves out
// (NOTES-azure.md).
func (s *sasSpec) sign(t *testing.T, table string) string {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	v := aztables.SASSignatureValues{
		Protocol: aztables.SASProtocolHTTPSandHTTP, StartTime: time.Now().Add(-5 * time.Minute).UTC(),
		ExpiryTime: time.Now().Add(time.Hour).UTC(), Permissions: s.perms.String(), TableName: table,
		StartPartitionKey: s.rng[0], StartRowKey: s.rng[1], EndPartitionKey: s.rng[2], EndRowKey: s.rng[3],
	}
	q, err := v.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"spk", "srk", "epk", "erk"} {
		if !strings.Contains(q, name+"=") {
			q += "&" + name + "=" + url.QueryEscape(s.rng[i])
		}
	}
	return q
}
