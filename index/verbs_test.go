package index_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// The CrossPartition's verbs, in direct mode and queued mode: Insert, Upsert,
// Update, Modify, Delete and DeleteIfExists return what the root Table's
// do, and an entity read through a copy carries the ETag of the version it
// was copied from, which Update accepts.
func TestInterVerbs(t *testing.T) {
	for _, queued := range []bool{false, true} {
		name := "direct"
		if queued {
			name = "queued"
		}
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			r := newInterRig(t, queued)
			if queued {
				defer r.worker(t, r.acct, r.ix, nil)()
			}
			settle := func() {
				if queued {
					r.drain(t, ctx)
				}
			}
			jon := staff()[0]
			etag, err := r.ix.Insert(ctx, jon)
			if err != nil {
				t.Fatal(err)
			}
			if cur, err := r.ix.Get(ctx, jon.Department, jon.ID); err != nil || cur.ETag != etag || etag == "" {
				t.Errorf("Insert returned ETag %q, the entity has %q (%v)", etag, cur.ETag, err)
			}
			if _, err := r.ix.Insert(ctx, jon); !errors.Is(err, tablekit.ErrAlreadyExists) {
				t.Errorf("Insert of an existing entity: %v, want ErrAlreadyExists", err)
			}
			settle()

			// Through a copy, with the ETag of the version copied.
			found, err := r.ix.Find(ctx, "Sales", "email", jon.Email)
			if err != nil || found.ETag != etag {
				t.Fatalf("Find = %+v, %v; want the entity with ETag %q", found, err, etag)
			}
			found.Age = 35
			etag, err = r.ix.Update(ctx, found, found.ETag)
			if err != nil {
				t.Fatalf("Update with the ETag of a Find: %v", err)
			}
			if _, err := r.ix.Update(ctx, found, found.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
				t.Errorf("Update with a stale ETag: %v, want ErrPreconditionFailed", err)
			}
			if _, err := r.ix.Update(ctx, found, ""); !errors.Is(err, tablekit.ErrInvalidInput) {
				t.Errorf("Update with no ETag: %v, want ErrInvalidInput", err)
			}
			missing := staff()[1]
			if _, err := r.ix.Update(ctx, missing, azcore.ETagAny); !errors.Is(err, tablekit.ErrNotFound) {
				t.Errorf("Update of a missing entity: %v, want ErrNotFound", err)
			}

			// Modify changes the stored entity and creates a missing one.
			mod, err := r.ix.Modify(ctx, jon.Department, jon.ID, func(e *Employee) error {
				e.LastName = "Hall"
				return nil
			})
			if err != nil || mod.LastName != "Hall" || mod.Age != 35 || mod.ETag == "" || mod.ETag == etag {
				t.Fatalf("Modify = %+v, %v", mod, err)
			}
			lisa, err := r.ix.Modify(ctx, missing.Department, missing.ID, func(e *Employee) error {
				e.FirstName, e.LastName, e.Email = missing.FirstName, missing.LastName, missing.Email
				return nil
			})
			if err != nil || lisa.ID != missing.ID || lisa.ETag == "" {
				t.Fatalf("Modify of a missing entity = %+v, %v", lisa, err)
			}
			stop := errors.New("stop")
			if _, err := r.ix.Modify(ctx, jon.Department, jon.ID, func(*Employee) error { return stop }); err != stop {
				t.Errorf("Modify whose fn failed: %v, want fn's error", err)
			}
			settle()
			r.check(t, ctx)
			equal(t, "Halls", collect(t, r.ix.By(ctx, "Sales", "lastname", "Hall")), []string{jon.ID})

			// Upsert returns the new ETag.
			lisa.Age = 30
			if etag, err = r.ix.Upsert(ctx, lisa); err != nil {
				t.Fatal(err)
			}
			if cur, err := r.ix.Get(ctx, lisa.Department, lisa.ID); err != nil || cur.ETag != etag {
				t.Errorf("Upsert returned ETag %q, the entity has %q (%v)", etag, cur.ETag, err)
			}

			// Delete is conditional; DeleteIfExists is not, and says
			// whether the entity existed.
			if err := r.ix.Delete(ctx, jon.Department, jon.ID, found.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
				t.Errorf("Delete with a stale ETag: %v, want ErrPreconditionFailed", err)
			}
			if err := r.ix.Delete(ctx, jon.Department, jon.ID, ""); !errors.Is(err, tablekit.ErrInvalidInput) {
				t.Errorf("Delete with no ETag: %v, want ErrInvalidInput", err)
			}
			if err := r.ix.Delete(ctx, jon.Department, jon.ID, mod.ETag); err != nil {
				t.Fatal(err)
			}
			if err := r.ix.Delete(ctx, jon.Department, jon.ID, mod.ETag); !errors.Is(err, tablekit.ErrNotFound) {
				t.Errorf("Delete of a missing entity: %v, want ErrNotFound", err)
			}
			if existed, err := r.ix.DeleteIfExists(ctx, lisa.Department, lisa.ID); err != nil || !existed {
				t.Errorf("DeleteIfExists = %v, %v; want true", existed, err)
			}
			if existed, err := r.ix.DeleteIfExists(ctx, lisa.Department, lisa.ID); err != nil || existed {
				t.Errorf("DeleteIfExists of a missing entity = %v, %v; want false, nil", existed, err)
			}
			settle()
			if stored := r.check(t, ctx); len(stored) != 0 {
				t.Errorf("stored after the deletes: %v", stored)
			}
		})
	}
}

// The costs the docs give for the queued CrossPartition's writes.
func TestInterQueuedCosts(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRigWith(t, &interRig{queued: true, lastNameOnly: true})
	cost := func(what string, want int64, do func() error) {
		t.Helper()
		before := r.acct.Meter().Snapshot()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := r.acct.Meter().Snapshot().Sub(before); got.Total() != want {
			t.Errorf("%s cost %v, want %d", what, got, want)
		}
	}
	e := staff()[0]
	var etag azcore.ETag
	cost("Insert", 3, func() (err error) { etag, err = r.ix.Insert(ctx, e); return err })
	cost("Update", 3, func() (err error) { etag, err = r.ix.Update(ctx, e, etag); return err })
	cost("Update(ETagAny)", 4, func() (err error) { etag, err = r.ix.Update(ctx, e, azcore.ETagAny); return err })
	cost("Upsert", 4, func() (err error) { etag, err = r.ix.Upsert(ctx, e); return err })
	cost("Modify", 4, func() error {
		_, err := r.ix.Modify(ctx, e.Department, e.ID, func(*Employee) error { return nil })
		return err
	})
	cur, err := r.ix.Get(ctx, e.Department, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	cost("Delete", 3, func() error { return r.ix.Delete(ctx, e.Department, e.ID, cur.ETag) })
	cost("DeleteIfExists of a missing entity", 2, func() error { _, err := r.ix.DeleteIfExists(ctx, e.Department, e.ID); return err })
}

// Every refusal names the exported operation that refused, in
// ValidationError.Op, never in Entity or Detail.
func TestRefusalsNameTheirOperation(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	tbl := mustNewTable[Employee](t, acct, "Unused")
	intra, err := index.NewSamePartition(tbl, employeeIndexes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lists := mustNewTable[tablekit.Entity](t, acct, "UnusedLists")
	inter, err := index.NewCrossPartition(tbl, []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true, Table: lists},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := func(seq func(func(Employee, error) bool)) error {
		for _, err := range seq {
			return err
		}
		return nil
	}
	bad := Employee{Department: "Sales", ID: "email!x"}
	long := Employee{Department: "Sales", ID: "1", Email: strings.Repeat("x", 1100)}
	cases := []struct {
		op  string
		err error
	}{
		{"index.NewSamePartition", func() error { _, err := index.NewSamePartition[Employee](nil, employeeIndexes(), nil); return err }()},
		{"index.NewSamePartition", func() error { _, err := index.NewSamePartition(tbl, nil, nil); return err }()},
		{"index.NewSamePartition", func() error {
			_, err := index.NewSamePartition(tbl, append(employeeIndexes(), employeeIndexes()[0]), nil)
			return err
		}()},
		{"index.NewCrossPartition", func() error { _, err := index.NewCrossPartition[Employee](nil, nil, nil); return err }()},
		{"index.NewCrossPartition", func() error {
			_, err := index.NewCrossPartition(tbl, []index.Index[Employee]{{Name: "x"}}, nil)
			return err
		}()},
		{"index.NewCrossPartition", func() error {
			_, err := index.NewCrossPartition(tbl, []index.Index[Employee]{{Name: "x", Key: func(e Employee) string { return e.Email }, Unique: true}}, nil)
			return err
		}()},
		{"index.NewCrossPartition", func() error {
			blobs := acct.Blobs().ServiceClient().NewContainerClient("unused")
			_, err := index.NewCrossPartition(tbl, []index.Index[Employee]{{Name: "x", Key: func(e Employee) string { return e.Email }, Blobs: blobs}}, nil)
			return err
		}()},
		{"index.NewSamePartition", func() error {
			_, err := index.NewSamePartition(tbl, []index.Index[Employee]{{Name: "x", Key: func(e Employee) string { return e.Email }, Global: true}}, nil)
			return err
		}()},
		{"index.NewSamePartition", func() error {
			_, err := index.NewSamePartition(tbl, []index.Index[Employee]{{Name: "x", Key: func(e Employee) string { return e.Email }, Table: lists}}, nil)
			return err
		}()},
		{"index.SamePartition.Insert", func() error { _, err := intra.Insert(ctx, bad); return err }()},
		{"index.SamePartition.Upsert", func() error { _, err := intra.Upsert(ctx, Employee{}); return err }()},
		{"index.SamePartition.Update", func() error { _, err := intra.Update(ctx, staff()[0], ""); return err }()},
		{"index.SamePartition.Modify", func() error { _, err := intra.Modify(ctx, "Sales", "1", nil); return err }()},
		{"index.SamePartition.Delete", intra.Delete(ctx, "Sales", "1", "")},
		{"index.SamePartition.DeleteIfExists", func() error { _, err := intra.DeleteIfExists(ctx, "Sales", "empid!1"); return err }()},
		{"index.SamePartition.Get", func() error { _, err := intra.Get(ctx, "Sales", "email!1"); return err }()},
		{"index.SamePartition.Find", func() error { _, err := intra.Find(ctx, "Sales", "phone", "1"); return err }()},
		{"index.SamePartition.By", first(intra.By(ctx, "Sales", "phone", "1"))},
		{"index.SamePartition.Range", first(intra.Range(ctx, "Sales", "phone", "1", "2"))},
		{"index.SamePartition.Prefix", first(intra.Prefix(ctx, "Sales", "phone", "1"))},
		{"index.SamePartition.IDs", func() error { _, err := intra.IDs(ctx, "Sales", "email", "x"); return err }()},
		{"index.CrossPartition.Insert", func() error { _, err := inter.Insert(ctx, long); return err }()},
		{"index.CrossPartition.Upsert", func() error { _, err := inter.Upsert(ctx, long); return err }()},
		{"index.CrossPartition.Update", func() error { _, err := inter.Update(ctx, staff()[0], ""); return err }()},
		{"index.CrossPartition.Modify", func() error { _, err := inter.Modify(ctx, "", "1", func(*Employee) error { return nil }); return err }()},
		{"index.CrossPartition.Delete", inter.Delete(ctx, "Sales", "1", "")},
		{"index.CrossPartition.DeleteIfExists", func() error { _, err := inter.DeleteIfExists(ctx, "Sales", ""); return err }()},
		{"index.CrossPartition.Sync", inter.Sync(ctx, "", "1")},
		{"index.CrossPartition.CaughtUp", func() error { _, err := inter.CaughtUp(ctx, "Sales", ""); return err }()},
		{"index.CrossPartition.Find", func() error { _, err := inter.Find(ctx, "Sales", "phone", "1"); return err }()},
		{"index.CrossPartition.By", first(inter.By(ctx, "Sales", "phone", "1"))},
		{"index.CrossPartition.Range", first(inter.Range(ctx, "Sales", "lastname", "a", "b"))},
		{"index.CrossPartition.Prefix", first(inter.Prefix(ctx, "Sales", "lastname", "a"))},
		{"index.CrossPartition.IDs", func() error { _, err := inter.IDs(ctx, "Sales", "email", "x"); return err }()},
		{"index.CrossPartition.Upsert", func() error {
			_, err := inter.Upsert(ctx, Employee{Department: "Sales", ID: "1", LastName: "\xff"})
			return err
		}()},
	}
	for _, c := range cases {
		var ve *tablekit.ValidationError
		if !errors.As(c.err, &ve) {
			t.Errorf("%s: %v, want a *tablekit.ValidationError", c.op, c.err)
			continue
		}
		if ve.Op != c.op {
			t.Errorf("%s: Op %q in %v", c.op, ve.Op, c.err)
		}
		if want := "index: " + strings.TrimPrefix(c.op, "index.") + ": "; !strings.HasPrefix(c.err.Error(), want) {
			t.Errorf("%s: message %q does not start with %q", c.op, c.err, want)
		}
		if strings.Contains(ve.Entity, "index.") || strings.Contains(ve.Entity, "SamePartition") || strings.Contains(ve.Entity, "CrossPartition") || strings.HasPrefix(ve.Detail, "index.") {
			t.Errorf("%s: an operation named in Entity %q or Detail %q", c.op, ve.Entity, ve.Detail)
		}
	}
}

// A SamePartition DeleteIfExists whose transaction's answer is lost, and whose
// SDK retry then finds the entity gone, settles by reading again: the
// entity and its copies are gone, and it reports false (it cannot tell
// whether this call deleted them), as Table.DeleteIfExists does.
func TestIntraDeleteIfExistsLostAnswerSettles(t *testing.T) {
	ctx := testCtx(t)
	setup := testenv.Account(t, nil)
	name := newTable(t, setup)
	var armed atomic.Bool
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: fastRetries, PerRetryPolicies: []policy.Policy{
		loseAnswer(&armed, func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.Contains(r.URL.Path, "$batch")
		}),
	}}})
	ix, err := index.NewSamePartition(mustNewTable[Employee](t, acct, name), employeeIndexes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := staff()[0]
	if _, err := ix.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	existed, err := ix.DeleteIfExists(ctx, e.Department, e.ID)
	if armed.Load() {
		t.Fatal("no answer was lost")
	}
	if err != nil || existed {
		t.Errorf("DeleteIfExists, its answer lost = %v, %v; want false, nil", existed, err)
	}
	if rks := rowKeys(t, ctx, mustNewTable[tablekit.Entity](t, setup, name), e.Department); len(rks) != 0 {
		t.Errorf("rows left: %q", rks)
	}
}
