package patterns_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// The examples connect to the tests' account: Azurite, or the account in
// AZURE_STORAGE_CONNECTION_STRING (in an application: tablekit.Open). Those
// with an Output comment run under go test; examples/<pattern> are the
// narrated, runnable versions.

func exampleTable(ctx context.Context, name string) (*tablekit.Account, *tablekit.Table[tablekit.Entity]) {
	acct := testenv.ExampleAccount()
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, fmt.Sprintf("%s%d", name, time.Now().UnixNano()%1e9), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		log.Fatal(err)
	}
	return acct, tbl
}

// exampleTableOf is exampleTable for an application's typed table, which
// the patterns take as it is.
func exampleTableOf[T any](ctx context.Context, name string) (*tablekit.Account, *tablekit.Table[T]) {
	acct, tbl := exampleTable(ctx, name)
	typed, err := tablekit.OpenTable[T](acct, tbl.Name(), nil)
	if err != nil {
		log.Fatal(err)
	}
	return acct, typed
}

// MeterYear holds a reading for every day of a year: 365 properties D001..
// D365 besides Unit, more than one entity may have.
type MeterYear struct {
	Meter string           `table:",pk"`
	Year  string           `table:",rk"`
	Unit  string           `table:"Unit"`
	Days  map[string]int64 `table:"-" wide:"D"`
	ETag  azcore.ETag      `table:",etag"` // the version: part 0's ETag
}

func ExampleWide() {
	ctx := context.Background()
	_, years := exampleTableOf[MeterYear](ctx, "Meters") // the application's Table[MeterYear]
	w, err := patterns.NewWide(years, nil)
	if err != nil {
		log.Fatal(err)
	}
	y := MeterYear{Meter: "meter17", Year: "2025", Unit: "kWh", Days: map[string]int64{}}
	for d := 1; d <= 365; d++ {
		y.Days[fmt.Sprintf("%03d", d)] = 0
	}
	// Two physical entities, written in one transaction.
	if _, err := w.Upsert(ctx, y); err != nil {
		log.Fatal(err)
	}
	// Rewrites only the physical entity holding D042, and part 0 (the
	// version); retried if another writer got there first.
	y, err = w.Modify(ctx, "meter17", "2025", func(v *MeterYear) error {
		v.Days["042"] += 17
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Conditional on the version Modify returned: ErrPreconditionFailed
	// if anyone wrote the year since.
	y.Unit = "MWh"
	if _, err := w.Update(ctx, y, y.ETag); err != nil {
		log.Fatal(err)
	}
	back, err := w.Get(ctx, "meter17", "2025") // one range query
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.Days["042"], back.Unit)
}

// Profile has a photo that may be larger than a table property allows.
type Profile struct {
	Team  string      `table:",pk"`
	User  string      `table:",rk"`
	Name  string      `table:"Name"`
	Photo []byte      `table:"Photo,omitempty"`
	ETag  azcore.ETag `table:",etag"`
}

func ExampleLarge() {
	ctx := context.Background()
	acct, profiles := exampleTableOf[Profile](ctx, "Profiles")
	l, err := patterns.NewLarge(profiles, acct.Blobs().ServiceClient().NewContainerClient("profile-photos"), nil)
	if err != nil {
		log.Fatal(err)
	}
	photo, err := os.ReadFile("ada.jpg")
	if err != nil {
		log.Fatal(err)
	}
	// The photo goes to a blob first, then the entity with its reference.
	if _, err := l.Upsert(ctx, Profile{Team: "eng", User: "ada", Name: "Ada", Photo: photo}); err != nil {
		log.Fatal(err)
	}
	// A list view needs no photos: read only the entity.
	p, err := l.Get(ctx, "eng", "ada", &patterns.LargeGetOptions{SkipBlobs: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name)
	// Now and then, remove blobs that crashed writers left behind.
	res, err := l.Sweep(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Deleted)
}

// Optimistic concurrency with large values: Update replaces the version
// whose ETag was read and refuses a stale one before writing any blob;
// Modify reads, changes and writes conditionally, trying again when
// another writer got there first.
func ExampleLarge_Update() {
	ctx := context.Background()
	acct, profiles := exampleTableOf[Profile](ctx, "Profiles")
	photos := acct.Blobs().ServiceClient().NewContainerClient(fmt.Sprintf("photos-%d", time.Now().UnixNano()%1e9))
	if _, err := photos.Create(ctx, nil); err != nil {
		log.Fatal(err)
	}
	l, err := patterns.NewLarge(profiles, photos, nil)
	if err != nil {
		log.Fatal(err)
	}
	photo := bytes.Repeat([]byte{0xff}, 100<<10) // more than a property holds: a blob
	if _, err := l.Insert(ctx, Profile{Team: "eng", User: "ada", Name: "Ada", Photo: photo}); err != nil {
		log.Fatal(err)
	}
	p, err := l.Get(ctx, "eng", "ada", nil)
	if err != nil {
		log.Fatal(err)
	}
	p.Name = "Ada Lovelace"
	if _, err := l.Update(ctx, p, p.ETag); err != nil {
		log.Fatal(err)
	}
	// p.ETag names the version just replaced: refused.
	_, err = l.Update(ctx, p, p.ETag)
	fmt.Println(errors.Is(err, tablekit.ErrPreconditionFailed))
	p, err = l.Modify(ctx, "eng", "ada", func(p *Profile) error {
		p.Name += ", Countess of Lovelace"
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name, len(p.Photo))
	// Output:
	// true
	// Ada Lovelace, Countess of Lovelace 102400
}

func ExampleSeries() {
	ctx := context.Background()
	_, tbl := exampleTable(ctx, "MessageStats")
	defer tbl.DeleteTable(ctx)
	s, err := patterns.NewSeries(tbl, nil) // 24 slots, H00..H23
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now().UTC()
	// Safe with any number of concurrent writers: ETags and retries.
	if _, err := s.Add(ctx, "emp000223", now.Format("2006-01-02"), now.Hour(), 1); err != nil {
		log.Fatal(err)
	}
	day, err := s.Get(ctx, "emp000223", now.Format("2006-01-02")) // one point query
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(day), day[now.Hour()])
	// Output: 24 1
}

// LoginAttempt is kept for a week.
type LoginAttempt struct {
	User string    `table:",pk"`
	ID   string    `table:",rk"`
	At   time.Time `table:"At"`
}

func ExamplePeriodTables() {
	ctx := context.Background()
	acct, err := tablekit.Open(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
	if err != nil {
		log.Fatal(err)
	}
	p, err := patterns.NewPeriodTables[LoginAttempt](acct, "Logins", patterns.Daily(), nil)
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	// Goes to table Logins<yyyymmdd> of today.
	if _, err := p.Insert(ctx, now, LoginAttempt{User: "ada", ID: now.Format("150405.000"), At: now}); err != nil {
		log.Fatal(err)
	}
	// Deletes the tables of days before the last 7: one request per day.
	dropped, err := p.Retain(ctx, 7)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dropped)
}

func ExampleStream() {
	ctx := context.Background()
	_, tbl := exampleTable(ctx, "Clicks")
	// PartitionKeys "0!clicks" .. "7!clicks": the shard bucket first.
	s, err := patterns.NewStream[tablekit.Entity](tbl, "clicks", &patterns.StreamOptions{Shards: 8})
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	if _, err := s.Append(ctx, patterns.Event[tablekit.Entity]{Time: now, ID: "click-1", Value: tablekit.Entity{Properties: map[string]any{"Page": "/"}}}); err != nil {
		log.Fatal(err)
	}
	// Eight range queries in parallel, merged into time order.
	for ev, err := range s.Query(ctx, now.Add(-time.Hour), now.Add(time.Minute), nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Time, ev.ID, ev.Value.Properties["Page"])
	}
}

// Dept and Staff share a partition.
type Dept struct {
	Name  string      `table:",pk"`
	Key   string      `table:",rk"`
	Count int         `table:"Count"`
	ETag  azcore.ETag `table:",etag"`
}

type Staff struct {
	Dept string `table:",pk"`
	ID   string `table:",rk"`
	Name string `table:"Name"`
}

func ExampleMixed() {
	ctx := context.Background()
	_, tbl := exampleTable(ctx, "Company")
	reg := patterns.NewRegistry(nil) // EntityType property
	if err := patterns.Register[Dept](reg, "Department", 1); err != nil {
		log.Fatal(err)
	}
	if err := patterns.Register[Staff](reg, "Employee", 1); err != nil {
		log.Fatal(err)
	}
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		log.Fatal(err)
	}
	for v, err := range m.Query(ctx, tablekit.PartitionEq("Sales"), nil) { // one query
		if err != nil {
			log.Fatal(err)
		}
		switch x := v.(type) {
		case Dept:
			fmt.Println("department with", x.Count, "employees")
		case Staff:
			fmt.Println("employee", x.Name)
		case tablekit.Entity:
			fmt.Println("unknown kind", x.Properties[reg.TypeProperty()])
		}
	}
}

func ExampleDenormalizer() {
	ctx := context.Background()
	_, tbl := exampleTable(ctx, "Company")
	// The department keeps a copy of its manager's name.
	d, err := patterns.NewDenormalizer[Staff](tbl, map[string]string{"Name": "ManagerName"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	// The manager and the copy in department entity Sales/Sales change
	// together, in one entity group transaction.
	if _, err := d.Write(ctx, Staff{Dept: "Sales", ID: "000100", Name: "Ann Jones"}, "Sales"); err != nil {
		log.Fatal(err)
	}
}
