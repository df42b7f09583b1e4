package tablekit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// BenchmarkTransaction100 encodes, submits and parses a transaction of 100
// upserts of 20-property entities, through tablekit's wire and through
// aztables' SubmitTransaction (entities built as EDMEntity and marshalled,
// the SDK samples' way). transport=replay answers every request with a
// recorded 202 and touches no network, which isolates the client's CPU
// time and allocations; transport=azurite sends to a real Azurite.
//
//	go test -run '^$' -bench '^BenchmarkTransaction100$' -benchmem -count 6 . | benchstat -col /impl -
func BenchmarkTransaction100(b *testing.B) {
	rows := make([]tablekit.Employee20, limits.TransactionActions)
	for i := range rows {
		rows[i] = tablekit.SampleEmployee20()
		rows[i].ID = fmt.Sprintf("%06d", i)
	}
	for _, transport := range []string{"replay", "azurite"} {
		b.Run("transport="+transport, func(b *testing.B) {
			tk, sdk := benchTransactionClients(b, transport)
			b.Run("impl=tablekit", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					acts := make([]tablekit.Action[tablekit.Employee20], len(rows))
					for i := range rows {
						acts[i] = tablekit.UpsertAction(rows[i])
					}
					etags, err := tk.Transaction(context.Background(), acts...)
					if err != nil || len(etags) != len(rows) {
						b.Fatalf("%d ETags, %v", len(etags), err)
					}
				}
			})
			b.Run("impl=aztables", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					acts := make([]aztables.TransactionAction, len(rows))
					for i := range rows {
						acts[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: sdkEmployee20(b, rows[i])}
					}
					if _, err := sdk.SubmitTransaction(context.Background(), acts, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// benchTransactionClients returns a tablekit table and an aztables client
// on one table, both sending through the given transport.
func benchTransactionClients(b *testing.B, transport string) (*tablekit.Table[tablekit.Employee20], *aztables.Client) {
	b.Helper()
	cs := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1"
	var tr policy.Transporter
	if transport == "replay" {
		tr = replayBatch{answer: recordedBatchAnswer(limits.TransactionActions)}
	} else {
		var err error
		if cs, err = testenv.SharedConnectionString(); err != nil {
			b.Fatal(err)
		}
	}
	acct, err := tablekit.Open(cs, &tablekit.Options{ClientOptions: azcore.ClientOptions{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	name := "bench" + strconv.Itoa(int(acct.Meter().Snapshot().Total())) + transport
	tk, err := tablekit.OpenTable[tablekit.Employee20](acct, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	if transport != "replay" {
		if err := tk.CreateIfNotExists(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tk.DeleteTable(context.Background()) })
	}
	svc, err := aztables.NewServiceClientFromConnectionString(cs, &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	return tk, svc.NewClient(name)
}

// sdkEmployee20 encodes an employee20 as aztables users do.
func sdkEmployee20(b *testing.B, in tablekit.Employee20) []byte {
	e := aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: in.Department, RowKey: in.ID},
		Properties: map[string]any{
			"FirstName": in.FirstName, "LastName": in.LastName, "Email": in.Email, "Phone": in.Phone,
			"City": in.City, "Country": in.Country, "Title": in.Title, "Manager": in.Manager,
			"Age": in.Age, "Level": in.Level, "Salary": aztables.EDMInt64(in.Salary),
			"EmployeeNo": aztables.EDMInt64(in.EmployeeNo), "Rating": in.Rating, "Bonus": in.Bonus,
			"Active": in.Active, "Remote": in.Remote, "Hired": aztables.EDMDateTime(in.Hired),
			"Born": aztables.EDMDateTime(in.Born), "Badge": aztables.EDMGUID(in.Badge.String()),
			"Photo": aztables.EDMBinary(in.Photo),
		},
	}
	data, err := json.Marshal(e)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// recordedBatchAnswer is a successful answer to a transaction of n
// actions, as Azurite sends it.
func recordedBatchAnswer(n int) []byte {
	var buf bytes.Buffer
	buf.WriteString("--batchresponse_3965f13c-e61a-44ce-5c0d-b998a82951c4\r\nContent-Type: multipart/mixed; boundary=changesetresponse_ea303334-9663-4011-713e-82a7bed89991\r\n\r\n")
	for i := range n {
		fmt.Fprintf(&buf, "--changesetresponse_ea303334-9663-4011-713e-82a7bed89991\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"+
			"HTTP/1.1 204 No Content\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nDataServiceVersion: 3.0;\r\n"+
			"ETag: W/\"datetime'2026-11-22T12%%3A43%%3A00.57%05dZ'\"\r\n\r\n\r\n", i)
	}
	buf.WriteString("--changesetresponse_ea303334-9663-4011-713e-82a7bed89991--\r\n--batchresponse_3965f13c-e61a-44ce-5c0d-b998a82951c4--\r\n")
	return buf.Bytes()
}

// replayBatch is a transport that answers every request with a recorded
// batch answer, after reading the request body as a server would.
type replayBatch struct{ answer []byte }

func (r replayBatch) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	h := http.Header{}
	h.Set("Content-Type", "multipart/mixed; boundary=batchresponse_3965f13c-e61a-44ce-5c0d-b998a82951c4")
	return &http.Response{StatusCode: http.StatusAccepted, Header: h, Body: io.NopCloser(bytes.NewReader(r.answer)), Request: req}, nil
}
