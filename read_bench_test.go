package tablekit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
)

// The read path, client side only: a point read, and one 1,000-entity
// query page, of 20-property entities decoded into a struct, through
// tablekit and through aztables the way its samples read (GetEntity or
// NewListEntitiesPager, then json.Unmarshal into an EDMEntity and the
// properties copied into the struct). The replay transport answers every
// request with an answer recorded from Azurite 3.37 and touches no
// network.
//
//	go test -run '^$' -bench '^Benchmark(Get|QueryPage1000)$' -benchmem -count 6 . | benchstat -col /impl -

// recordedEntity is Azurite's answer body to a point read of a
// SampleEmployee20, with its RowKey as %s (minimal metadata).
const recordedEntity = `"odata.etag":"W/\"datetime'2026-11-26T18%%3A41%%3A54.3131218Z'\"","PartitionKey":"Sales","RowKey":"%s",` +
	`"FirstName":"Jane","LastName":"Jones","Email":"jonesj@contoso.com","Phone":"+44 20 7946 0000","City":"London","Country":"UK",` +
	`"Title":"Account manager","Manager":"000100","Age":34,"Level":3,"Salary@odata.type":"Edm.Int64","Salary":"8500000",` +
	`"EmployeeNo@odata.type":"Edm.Int64","EmployeeNo":"1099511627776","Rating":4.25,"Bonus":1000.0,"Active":true,"Remote":false,` +
	`"Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07.1234567Z","Born@odata.type":"Edm.DateTime",` +
	`"Born":"1990-01-02T00:00:00.0000000Z","Badge@odata.type":"Edm.Guid","Badge":"01020304-0506-0708-090a-0b0c0d0e0f10",` +
	`"Photo@odata.type":"Edm.Binary","Photo":"YSBzbWFsbCBwaG90byBibG9i","Timestamp":"2026-11-26T18:41:54.3131218Z"`

// replayReads answers a point read with one recorded entity and a query
// with a recorded page of pageSize entities, after the request is made
// as a server would see it.
type replayReads struct{ entity, page []byte }

func newReplayReads(pageSize int) replayReads {
	entity := `{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#Employees/@Element",` + fmt.Sprintf(recordedEntity, "000223") + `}`
	var page bytes.Buffer
	page.WriteString(`{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#Employees","value":[`)
	for i := range pageSize {
		if i > 0 {
			page.WriteByte(',')
		}
		fmt.Fprintf(&page, "{"+recordedEntity+"}", fmt.Sprintf("%06d", i))
	}
	page.WriteString("]}")
	return replayReads{entity: []byte(entity), page: page.Bytes()}
}

func (r replayReads) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json;odata=minimalmetadata")
	h.Set("X-Ms-Request-Id", "642479d3-1431-4171-b9fa-cf2f48983f54")
	h.Set("Date", "Thu, 26 Nov 2026 18:41:54 GMT")
	body := r.page
	if strings.Contains(req.URL.Path, "(PartitionKey=") {
		body = r.entity
		h.Set("ETag", `W/"datetime'2026-11-26T18%3A41%3A54.3131218Z'"`)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
}

// benchReadClients returns a tablekit table and an aztables client on the
// table "Employees", both answered by tr.
func benchReadClients(b *testing.B, tr policy.Transporter) (*tablekit.Table[tablekit.Employee20], *aztables.Client) {
	b.Helper()
	cs := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1"
	acct, err := tablekit.Open(cs, &tablekit.Options{ClientOptions: azcore.ClientOptions{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	tk, err := tablekit.OpenTable[tablekit.Employee20](acct, "Employees", nil)
	if err != nil {
		b.Fatal(err)
	}
	svc, err := aztables.NewServiceClientFromConnectionString(cs, &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	return tk, svc.NewClient("Employees")
}

// BenchmarkGet reads one entity by its keys into a struct.
func BenchmarkGet(b *testing.B) {
	tk, sdk := benchReadClients(b, newReplayReads(0))
	want := tablekit.SampleEmployee20()
	ctx := context.Background()
	b.Run("impl=tablekit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e, err := tk.Get(ctx, "Sales", "000223")
			if err != nil || e.Salary != want.Salary {
				b.Fatalf("%+v, %v", e, err)
			}
		}
	})
	b.Run("impl=aztables", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := sdk.GetEntity(ctx, "Sales", "000223", nil)
			if err != nil {
				b.Fatal(err)
			}
			if e := sdkDecodeEmployee20(b, resp.Value); e.Salary != want.Salary {
				b.Fatalf("%+v", e)
			}
		}
	})
}

// BenchmarkQueryPage1000 reads one page of 1,000 entities into structs.
// ns/entity is the time per entity.
func BenchmarkQueryPage1000(b *testing.B) {
	const n = limits.PageSize
	tk, sdk := benchReadClients(b, newReplayReads(n))
	want := tablekit.SampleEmployee20()
	ctx := context.Background()
	filter := "PartitionKey eq 'Sales'"
	b.Run("impl=tablekit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			page, err := tk.QueryPage(ctx, tablekit.PartitionEq("Sales"), nil)
			if err != nil || len(page.Items) != n || page.Items[n-1].Salary != want.Salary {
				b.Fatalf("%d items, %v", len(page.Items), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
	})
	b.Run("impl=aztables", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := sdk.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter}).NextPage(ctx)
			if err != nil || len(resp.Entities) != n {
				b.Fatalf("%d entities, %v", len(resp.Entities), err)
			}
			items := make([]tablekit.Employee20, 0, len(resp.Entities))
			for _, data := range resp.Entities {
				items = append(items, sdkDecodeEmployee20(b, data))
			}
			if items[n-1].Salary != want.Salary {
				b.Fatalf("%+v", items[n-1])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
	})
}

// sdkDecodeEmployee20 decodes an entity aztables returned as its samples
// do: json.Unmarshal into an EDMEntity, then the properties copied into
// the struct.
func sdkDecodeEmployee20(b *testing.B, data []byte) tablekit.Employee20 {
	var e aztables.EDMEntity
	if err := json.Unmarshal(data, &e); err != nil {
		b.Fatal(err)
	}
	p := e.Properties
	var out tablekit.Employee20
	out.Department, out.ID = e.PartitionKey, e.RowKey
	out.FirstName, _ = p["FirstName"].(string)
	out.LastName, _ = p["LastName"].(string)
	out.Email, _ = p["Email"].(string)
	out.Phone, _ = p["Phone"].(string)
	out.City, _ = p["City"].(string)
	out.Country, _ = p["Country"].(string)
	out.Title, _ = p["Title"].(string)
	out.Manager, _ = p["Manager"].(string)
	if v, ok := p["Age"].(int32); ok {
		out.Age = v
	}
	if v, ok := p["Level"].(int32); ok {
		out.Level = v
	}
	if v, ok := p["Salary"].(aztables.EDMInt64); ok {
		out.Salary = int64(v)
	}
	if v, ok := p["EmployeeNo"].(aztables.EDMInt64); ok {
		out.EmployeeNo = int64(v)
	}
	out.Rating, _ = p["Rating"].(float64)
	out.Bonus, _ = p["Bonus"].(float64)
	out.Active, _ = p["Active"].(bool)
	out.Remote, _ = p["Remote"].(bool)
	if v, ok := p["Hired"].(aztables.EDMDateTime); ok {
		out.Hired = time.Time(v)
	}
	if v, ok := p["Born"].(aztables.EDMDateTime); ok {
		out.Born = time.Time(v)
	}
	if v, ok := p["Badge"].(aztables.EDMGUID); ok {
		out.Badge, _ = codec.ParseGUID(string(v))
	}
	if v, ok := p["Photo"].(aztables.EDMBinary); ok {
		out.Photo = v
	}
	return out
}
