package azurite

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestClassifyTable(t *testing.T) {
	for _, tc := range []struct {
		method, xMethod, path, query string
		kind                         tableOpKind
		table, pk, rk                string
		keys                         bool
	}{
		{method: "GET", path: "/Tables", kind: opOther},
		{method: "POST", path: "/Tables", kind: opOther},
		{method: "DELETE", path: "/Tables('orders')", kind: opOther},
		{method: "GET", path: "/orders", query: "comp=acl", kind: opOther},
		{method: "POST", path: "/$batch", kind: opBatch},
		{method: "GET", path: "/orders()", kind: opQuery, table: "orders"},
		{method: "GET", path: "/orders", kind: opQuery, table: "orders"},
		{method: "POST", path: "/orders", kind: opInsert, table: "orders"},
		{method: "GET", path: "/orders(PartitionKey='a',RowKey='b')", kind: opPointRead, table: "orders", pk: "a", rk: "b", keys: true},
		{method: "PUT", path: "/orders(PartitionKey='a%27%27b',RowKey='%C3%A9%2F')", kind: opWrite, table: "orders", pk: "a'b", rk: "é/", keys: true},
		{method: "PATCH", path: "/orders(PartitionKey='',RowKey='')", kind: opWrite, table: "orders", keys: true},
		{method: "MERGE", path: "/orders(PartitionKey='a',RowKey='b')", kind: opWrite, table: "orders", pk: "a", rk: "b", keys: true},
		{method: "POST", xMethod: "MERGE", path: "/orders(PartitionKey='a',RowKey='b')", kind: opWrite, table: "orders", pk: "a", rk: "b", keys: true},
		{method: "DELETE", path: "/orders(PartitionKey='a',RowKey='b')", kind: opDelete, table: "orders", pk: "a", rk: "b", keys: true},
		// aztables leaves a quote undoubled in batch request lines: the keys
		// are then unknown, and the target answers.
		{method: "PUT", path: "/orders(PartitionKey='o'k',RowKey='b')", kind: opWrite, table: "orders"},
	} {
		q, _ := url.ParseQuery(tc.query)
		op := classifyTable(tc.method, tc.xMethod, "/devstoreaccount1"+tc.path, q)
		if op.kind != tc.kind || op.table != tc.table || op.pk != tc.pk || op.rk != tc.rk || op.keysKnown != tc.keys {
			t.Errorf("%s %s: got %+v", tc.method, tc.path, op)
		}
	}
}

func TestSASRange(t *testing.T) {
	q := url.Values{"sig": {"x"}, "spk": {"b"}, "srk": {"2"}, "epk": {"c"}, "erk": {"1"}}
	r := parseSASRange(q)
	for _, tc := range []struct {
		pk, rk string
		in     bool
	}{
		{"a", "9", false}, {"b", "1", false}, {"b", "2", true}, {"b", "zzz", true},
		{"bb", "", true}, {"c", "0", true}, {"c", "1", true}, {"c", "10", false}, {"d", "", false},
	} {
		if got := r.contains(tc.pk, tc.rk); got != tc.in {
			t.Errorf("(%q, %q) in range: %v, want %v", tc.pk, tc.rk, got, tc.in)
		}
	}
	want := "(PartitionKey eq 'x') and (PartitionKey gt 'b' or (PartitionKey eq 'b' and RowKey ge '2')) and (PartitionKey lt 'c' or (PartitionKey eq 'c' and RowKey le '1'))"
	if got := r.narrow("PartitionKey eq 'x'"); got != want {
		t.Errorf("narrow: %s", got)
	}
	if got := (&sasRange{spk: "o'k", hasSPK: true, epk: "o'k", hasEPK: true}).narrow(""); got != "PartitionKey ge 'o''k' and PartitionKey le 'o''k'" {
		t.Errorf("narrow with a quote: %s", got)
	}
	if parseSASRange(url.Values{"spk": {"a"}}) != nil || parseSASRange(url.Values{"sig": {"x"}}) != nil {
		t.Error("a range without a signature, or a signature without a range, is not a range")
	}
	// The service orders keys by UTF-16 code units: U+FFFD sorts after
	// U+10000 (a surrogate pair, 0xD800...) there, before it in UTF-8.
	if compareKeys("\U00010000", "\uFFFD") >= 0 {
		t.Error("compareKeys does not follow UTF-16 order")
	}
}

func TestThrottleBuckets(t *testing.T) {
	now := time.Unix(0, 0)
	th := newThrottle(&ThrottleOptions{PartitionRate: 10, AccountRate: 100, Burst: 500 * time.Millisecond, clock: func() time.Time { return now }})
	for i := range 5 {
		if got := th.take("p", 1); got != throttleOK {
			t.Fatalf("take %d: %v", i, got)
		}
	}
	if got := th.take("p", 1); got != throttlePartition {
		t.Fatalf("6th take of a 5-token bucket: %v", got)
	}
	if got := th.take("q", 3); got != throttleOK {
		t.Fatalf("another partition: %v", got)
	}
	now = now.Add(time.Second) // full again (5), not 10: capacity is Burst × rate
	if got := th.take("p", 7); got != throttleOK {
		t.Fatalf("a take over capacity on a full bucket: %v", got)
	}
	if got := th.take("p", 1); got != throttlePartition {
		t.Fatalf("take from a bucket in debt: %v", got)
	}
	for range 200 {
		th.take("", 0)
	}
	if got := th.take("", 0); got != throttleAccount {
		t.Fatalf("account bucket: %v", got)
	}
}

func TestParseBatchLineEndings(t *testing.T) {
	body := strings.Join([]string{
		"--batch_1",
		"Content-Type: multipart/mixed; boundary=changeset_1",
		"",
		"--changeset_1",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"POST http://h/devstoreaccount1/orders HTTP/1.1",
		"Content-Type: application/json",
		"",
		`{"PartitionKey":"p","RowKey":"1"}`,
		"--changeset_1",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"DELETE http://h/devstoreaccount1/orders(PartitionKey='p',RowKey='2') HTTP/1.1",
		"If-Match: *",
		"",
		"",
		"--changeset_1--",
		"--batch_1--",
		"",
	}, "\n")
	b, err := parseBatch("multipart/mixed; boundary=batch_1", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.ops) != 2 || b.ops[0].kind != opInsert || b.ops[0].rk != "1" || b.ops[1].kind != opDelete || b.ops[1].rk != "2" {
		t.Fatalf("ops: %+v", b.ops)
	}
	if f := checkBatch(b, entityLimits{}); f != nil {
		t.Fatalf("checkBatch: %+v", f)
	}
	if responseBoundary("batch_1", "batch", "batchresponse") != "batchresponse_1" {
		t.Error("response boundary")
	}
}

// Nothing a client sends makes the front's parsers panic.
func FuzzParseBatch(f *testing.F) {
	f.Add("multipart/mixed; boundary=b", "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\n\r\nPOST http://h/a/t HTTP/1.1\r\n\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}\r\n--c--\r\n--b--\r\n")
	f.Add("multipart/mixed", "")
	f.Fuzz(func(t *testing.T, ct, body string) {
		if b, err := parseBatch(ct, []byte(body)); err == nil {
			checkBatch(b, entityLimits{})
			checkBatch(b, entityLimits{cosmos: true})
		}
	})
}

func FuzzCheckEntity(f *testing.F) {
	f.Add(`{"PartitionKey":"p","RowKey":"r","A":1,"B@odata.type":"Edm.Binary","B":"AAAA","W@odata.type":"Edm.DateTime","W":"1500-01-01T00:00:00Z"}`, "/t(PartitionKey='a',RowKey='b')")
	f.Add(`[1,2]`, "/t")
	f.Fuzz(func(t *testing.T, body, path string) {
		op := classifyTable(http.MethodPut, "", path, url.Values{})
		props, _, err := parseEntity([]byte(body))
		if err != nil {
			return
		}
		k := keysOf(props)
		for _, l := range []entityLimits{{}, {cosmos: true}} {
			l.checkEntity([]byte(body), props, k)
			l.checkEntity([]byte(body), props, entityKeys{pk: op.pk, rk: op.rk, hasPK: op.keysKnown, hasRK: op.keysKnown})
		}
	})
}

// TestTokenShapes: the front's continuation values take Table storage's
// shape ("1!<n>!<base64, padding '-'>") and Cosmos DB's JSON one, and read
// back; a value of another shape is not taken for one.
func TestTokenShapes(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("1"), []byte("contToken"), []byte(`{"a":true,"pk":"o'k/+?"}`)} {
		s := storageToken(b)
		if !strings.HasPrefix(s, "1!") || strings.Contains(s, "=") {
			t.Errorf("storageToken(%q) = %q", b, s)
		}
		if got, ok := parseStorageToken(s); !ok || string(got) != string(b) {
			t.Errorf("parseStorageToken(%q) = %q, %v", s, got, ok)
		}
		c := writeCosmosToken(b)
		if got, ok := parseCosmosToken(c); !ok && len(b) > 0 || string(got) != string(b) {
			t.Errorf("parseCosmosToken(%q) = %q, %v", c, got, ok)
		}
	}
	// The recorded tokens' shapes.
	if got, ok := parseStorageToken("1!12!Y29udFRva2Vu"); !ok || string(got) != "contToken" {
		t.Errorf("the recorded NextPartitionKey: %q %v", got, ok)
	}
	if got, ok := parseStorageToken("1!4!MQ--"); !ok || string(got) != "1" {
		t.Errorf("the recorded NextRowKey: %q %v", got, ok)
	}
	for _, bad := range []string{"", "front.eyJ9", "1!9!Y29udFRva2Vu", "1!12!Y29udFRva2Vu!", "2!4!MQ--"} {
		if _, ok := parseStorageToken(bad); ok {
			t.Errorf("parseStorageToken(%q) accepted", bad)
		}
	}
	if _, ok := parseCosmosToken(`{"token":"","range":{"min":"","max":"FF"}}`); ok {
		t.Error("an empty Cosmos token accepted")
	}
}

// TestUntunnelMerges: a batch's tunnelled merges (POST with X-HTTP-Method:
// MERGE, as the SDKs send them to Cosmos DB) become MERGE requests, which
// Azurite understands; nothing else changes.
func TestUntunnelMerges(t *testing.T) {
	body := strings.Join([]string{
		"--batch_1", "Content-Type: multipart/mixed; boundary=changeset_1", "",
		"--changeset_1", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"POST http://h/t(PartitionKey='p',RowKey='1') HTTP/1.1", "Content-Type: application/json", "X-HTTP-Method: MERGE", "", `{"A":1}`,
		"--changeset_1", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"POST http://h/t HTTP/1.1", "Content-Type: application/json", "", `{"PartitionKey":"p","RowKey":"2","X-HTTP-Method: MERGE":1}`,
		"--changeset_1--", "--batch_1--", ""}, "\r\n")
	got, changed := untunnelMerges([]byte(body))
	if !changed {
		t.Fatal("nothing changed")
	}
	want := strings.Replace(body, "POST http://h/t(PartitionKey='p',RowKey='1') HTTP/1.1\r\nContent-Type: application/json\r\nX-HTTP-Method: MERGE\r\n",
		"MERGE http://h/t(PartitionKey='p',RowKey='1') HTTP/1.1\r\nContent-Type: application/json\r\n", 1)
	if string(got) != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if _, changed := untunnelMerges([]byte(want)); changed {
		t.Error("a batch without tunnelled merges changed")
	}
}

// TestCosmosMessages: Cosmos DB's wording and shape of error messages, as
// recorded.
func TestCosmosMessages(t *testing.T) {
	for _, c := range []struct {
		status  int
		msg     string
		inBatch bool
		want    string
	}{
		{409, "2:The specified entity already exists.", true, "2:The specified entity already exists.\n\nRequestID:ID\n"},
		{404, "The specified resource does not exist.", false, "The specified resource does not exist.\nRequestID:ID\n"},
		{409, "The table specified already exists.", false, "The specified table already exists.\nRequestID:ID\n"},
		{400, "3:" + msgDuplicateRow, false, "3:" + msgDuplicateRow + "\r\nActivityId: ID" + cosmosActivitySuffix + "\nRequestID:ID\n"},
		{400, msgInt64OutOfRange, false, msgCosmosInvalidInput + "\r\nActivityId: ID" + cosmosActivitySuffix + "\nRequestID:ID\n"},
	} {
		if got := cosmosMessage(c.status, c.msg, "ID", c.inBatch); got != c.want {
			t.Errorf("cosmosMessage(%d, %q, %v) = %q, want %q", c.status, c.msg, c.inBatch, got, c.want)
		}
	}
}
