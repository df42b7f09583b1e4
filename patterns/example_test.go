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
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// The examples use the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite they start (in an application: tablekit.Open of your connection
// string). Those with an Output comment run under go test;
// examples/<pattern> are the narrated, runnable versions.

// exampleTable opens the account, creates a table of a new name and
// returns it as the application's Table[T]; cleanup deletes the table and
// stops the Azurite it started.
func exampleTable[T any](ctx context.Context, name string) (acct *tablekit.Account, tbl *tablekit.Table[T], cleanup func()) {
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	acct, err = tablekit.Open(conn, nil)
	if err == nil {
		tbl, err = tablekit.OpenTable[T](acct, fmt.Sprintf("%s%d", name, time.Now().UnixNano()%1e9), nil)
	}
	if err == nil {
		err = tbl.CreateIfNotExists(ctx)
	}
	if err != nil {
		_ = stop()
		log.Fatal(err)
	}
	return acct, tbl, func() {
		_ = tbl.DeleteTable(context.WithoutCancel(ctx))
		_ = stop()
	}
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
	_, years, cleanup := exampleTable[MeterYear](ctx, "Meters") // the application's Table[MeterYear]
	defer cleanup()
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
	// Merge writes the properties given (here one day) and keeps the
	// others: "" inserts or merges, a version must still be current.
	if _, err := w.Merge(ctx, MeterYear{Meter: "meter17", Year: "2025", Unit: "MWh", Days: map[string]int64{"043": 5}}, ""); err != nil {
		log.Fatal(err)
	}
	back, err := w.Get(ctx, "meter17", "2025") // one range query
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.Days["042"], back.Days["043"], len(back.Days), back.Unit)
	// Output: 17 5 365 MWh
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
	acct, profiles, cleanup := exampleTable[Profile](ctx, "Profiles")
	defer cleanup()
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
	// A list view needs no photos: select the properties it shows, and
	// no blob is read.
	for p, err := range l.Query(ctx, tablekit.PartitionEq("eng"), &tablekit.QueryOptions{Select: []string{"Name"}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p.Name)
	}
	// Now and then, remove blobs that crashed writers left behind.
	deleted, err := l.Sweep(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(deleted)
}

// Optimistic concurrency with large values: Update replaces the version
// whose ETag was read and refuses a stale one before writing any blob;
// Modify reads, changes and writes conditionally, trying again when
// another writer got there first.
func ExampleLarge_Update() {
	ctx := context.Background()
	acct, profiles, cleanup := exampleTable[Profile](ctx, "Profiles")
	defer cleanup()
	photos := acct.Blobs().ServiceClient().NewContainerClient(fmt.Sprintf("photos-%d", time.Now().UnixNano()%1e9))
	if _, err := photos.Create(ctx, nil); err != nil {
		log.Fatal(err)
	}
	defer photos.Delete(context.WithoutCancel(ctx), nil)
	l, err := patterns.NewLarge(profiles, photos, nil)
	if err != nil {
		log.Fatal(err)
	}
	photo := bytes.Repeat([]byte{0xff}, 100<<10) // more than a property holds: a blob
	if _, err := l.Insert(ctx, Profile{Team: "eng", User: "ada", Name: "Ada", Photo: photo}); err != nil {
		log.Fatal(err)
	}
	p, err := l.Get(ctx, "eng", "ada")
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
	_, tbl, cleanup := exampleTable[tablekit.Entity](ctx, "MessageStats")
	defer cleanup()
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
	// Table Logins<yyyymmdd> of today, created on first use.
	today, err := p.Table(ctx, now)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := today.Insert(ctx, LoginAttempt{User: "ada", ID: now.Format("150405.000"), At: now}); err != nil {
		log.Fatal(err)
	}
	// Deletes the tables of days before the last 7: one request per day.
	dropped, err := p.DropBefore(ctx, now.AddDate(0, 0, -6))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dropped)
}

func ExampleTimeline() {
	ctx := context.Background()
	_, tbl, cleanup := exampleTable[tablekit.Entity](ctx, "Clicks")
	defer cleanup()
	// PartitionKeys "0!clicks" .. "7!clicks": the shard bucket first.
	s, err := patterns.NewTimeline[tablekit.Entity](tbl, "clicks", 8)
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	if _, err := s.Append(ctx, patterns.TimelineEntry[tablekit.Entity]{Time: now, ID: "click-1", Value: tablekit.Entity{Properties: map[string]any{"Page": "/"}}}); err != nil {
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
	_, tbl, cleanup := exampleTable[tablekit.Entity](ctx, "Company")
	defer cleanup()
	var reg tablekit.Registry // kinds in the EntityType property
	if err := tablekit.Register[Dept](&reg, "Department", 1); err != nil {
		log.Fatal(err)
	}
	if err := tablekit.Register[Staff](&reg, "Employee", 1); err != nil {
		log.Fatal(err)
	}
	m, err := patterns.NewMixed(tbl, &reg)
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
			fmt.Println("unknown kind", x.Properties["EntityType"])
		}
	}
}

func ExampleDenormalizer() {
	ctx := context.Background()
	_, tbl, cleanup := exampleTable[tablekit.Entity](ctx, "Company")
	defer cleanup()
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
