package codec

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// employee20 has 20 custom properties of mixed types, the benchmark shape.
type employee20 struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Email      string
	Phone      string
	City       string
	Country    string
	Title      string
	Manager    string
	Age        int32
	Level      int32
	Salary     int64
	EmployeeNo int64
	Rating     float64
	Bonus      float64
	Active     bool
	Remote     bool
	Hired      time.Time
	Born       time.Time
	Badge      GUID
	Photo      []byte
}

func sampleEmployee20() employee20 {
	return employee20{
		Department: "Sales", ID: "000223", FirstName: "Jane", LastName: "Jones", Email: "jonesj@contoso.com",
		Phone: "+44 20 7946 0000", City: "London", Country: "UK", Title: "Account manager", Manager: "000100",
		Age: 34, Level: 3, Salary: 8_500_000, EmployeeNo: 1 << 40, Rating: 4.25, Bonus: 1000,
		Active: true, Remote: false,
		Hired: time.Date(2012, 3, 4, 5, 6, 7, 123456700, time.UTC), Born: time.Date(1990, 1, 2, 0, 0, 0, 0, time.UTC),
		Badge: GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Photo: []byte("a small photo blob"),
	}
}

// BenchmarkCodec encodes an employee20 to OData JSON and decodes it back.
func BenchmarkCodec(b *testing.B) {
	plan, err := planFor(reflect.TypeFor[employee20]())
	if err != nil {
		b.Fatal(err)
	}
	in := sampleEmployee20()
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		data, err := plan.encodeStruct(buf[:0], reflect.ValueOf(&in).Elem(), &encodeState{})
		if err != nil {
			b.Fatal(err)
		}
		var out employee20
		if err := plan.decodeStruct(data, reflect.ValueOf(&out).Elem(), &decodeState{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecSDK does the same work the way aztables users do it:
// build an EDMEntity, json.Marshal it, json.Unmarshal into an EDMEntity and
// copy the properties back into the struct.
func BenchmarkCodecSDK(b *testing.B) {
	in := sampleEmployee20()
	b.ReportAllocs()
	for b.Loop() {
		e := aztables.EDMEntity{
			Entity: aztables.Entity{PartitionKey: in.Department, RowKey: in.ID},
			Properties: map[string]any{
				"FirstName": in.FirstName, "LastName": in.LastName, "Email": in.Email, "Phone": in.Phone,
				"City": in.City, "Country": in.Country, "Title": in.Title, "Manager": in.Manager,
				"Age": in.Age, "Level": in.Level, "Salary": aztables.EDMInt64(in.Salary),
				"EmployeeNo": aztables.EDMInt64(in.EmployeeNo), "Rating": in.Rating, "Bonus": in.Bonus,
				"Active": in.Active, "Remote": in.Remote, "Hired": aztables.EDMDateTime(in.Hired),
				"Born": aztables.EDMDateTime(in.Born), "Badge": aztables.EDMGUID(GUID(in.Badge).String()),
				"Photo": aztables.EDMBinary(in.Photo),
			},
		}
		data, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		var back aztables.EDMEntity
		if err := json.Unmarshal(data, &back); err != nil {
			b.Fatal(err)
		}
		p := back.Properties
		var out employee20
		out.Department, out.ID = back.PartitionKey, back.RowKey
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
			out.Badge, _ = parseGUID(string(v))
		}
		if v, ok := p["Photo"].(aztables.EDMBinary); ok {
			out.Photo = v
		}
		_ = out
	}
}

// BenchmarkEncodeEntity converts an employee20 to its property bag, as the
// typed patterns do before every write (ToEntity).
func BenchmarkEncodeEntity(b *testing.B) {
	in := sampleEmployee20()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToEntity(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEntity converts the property bag of an employee20 back to
// the struct, as the typed patterns do after every read (Decode).
func BenchmarkDecodeEntity(b *testing.B) {
	e, err := ToEntity(sampleEmployee20())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromEntity[employee20](e); err != nil {
			b.Fatal(err)
		}
	}
}
