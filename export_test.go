package tablekit

import (
	"context"
	"errors"
	"time"
)

// Names the external test package's benchmarks share with the internal
// ones.
type Employee20 = employee20

var SampleEmployee20 = sampleEmployee20

// GovernorRate is the entities per second g now lets through to partition
// pk of table, for the external tests.
func GovernorRate(g *Governor, table, pk string) float64 { return g.Rate(table, pk) }

// GovernorWait and GovernorDone are g's wait and done, for the external
// tests.
func GovernorWait(ctx context.Context, g *Governor, table, pk string, entities int) error {
	return g.wait(ctx, table, pk, entities)
}

func GovernorDone(g *Governor, table, pk string, entities int, err error) {
	g.done(table, pk, entities, err)
}

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

// ItemsFailed reports whether err is the error of a bulk write some of
// whose items failed, for the external tests.
func ItemsFailed(err error) bool {
	var be *bulkError
	return errors.As(err, &be)
}
