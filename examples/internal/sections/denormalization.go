package sections

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/patterns"
)

// Denormalization shows the denormalization pattern: a department keeps a
// copy of its manager's details, updated with the manager in one
// transaction, so one point query answers for both.
func Denormalization() demo.Section {
	return demo.Section{
		Name:        "denormalization",
		Description: "denormalization: the manager's name and email copied into the department, kept in sync in one transaction",
		Run:         runDenormalization,
	}
}

type dnDepartment struct {
	Name          string `table:",pk"`
	Key           string `table:",rk"`
	ManagerName   string `table:"ManagerName"`
	ManagerEmail  string `table:"ManagerEmail"`
	EmployeeCount int    `table:"EmployeeCount"`
}

type dnEmployee struct {
	Department string      `table:",pk"`
	Key        string      `table:",rk"`
	Name       string      `table:"Name"`
	Email      string      `table:"Email"`
	ETag       azcore.ETag `table:",etag"`
}

func runDenormalization(ctx context.Context, env *demo.Env) error {
	tbl, err := patEntityTable(ctx, env, "Denormalization")
	if err != nil {
		return err
	}
	meter := env.Account.Meter()
	reg := patterns.NewRegistry(nil)
	if err := patterns.Register[dnDepartment](reg, "Department", 1); err != nil {
		return err
	}
	if err := patterns.Register[dnEmployee](reg, "Employee", 1); err != nil {
		return err
	}
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		return err
	}
	d, err := patterns.NewDenormalizer[dnEmployee](tbl, map[string]string{"Name": "ManagerName", "Email": "ManagerEmail"}, &patterns.DenormalizeOptions{Registry: reg})
	if err != nil {
		return err
	}
	env.Say("to show a department with its manager's contact details in one point query, the department keeps a copy of them")
	if _, err := m.Insert(ctx, dnDepartment{Name: "Sales", Key: "Sales", EmployeeCount: 12}); err != nil {
		return err
	}
	mgr := dnEmployee{Department: "Sales", Key: "000100", Name: "Ann Jones", Email: "ann@contoso.com"}
	before := meter.Snapshot()
	if _, err := d.Write(ctx, mgr, "Sales"); err != nil {
		return err
	}
	env.Say("the manager and the department's copy written together (same partition): %v", meter.Snapshot().Sub(before))

	mgr.Email = "ann.jones@contoso.com"
	before = meter.Snapshot()
	etag, err := d.Write(ctx, mgr, "Sales")
	if err != nil {
		return err
	}
	env.Say("the manager's new email and its copy change in one entity group transaction, so no reader sees them disagree: %v", meter.Snapshot().Sub(before))

	before = meter.Snapshot()
	v, err := m.Get(ctx, "Sales", "Sales")
	if err != nil {
		return err
	}
	dept := v.(dnDepartment)
	env.Say("one point query: Sales has %d employees, managed by %s <%s> (%v)", dept.EmployeeCount, dept.ManagerName, dept.ManagerEmail, meter.Snapshot().Sub(before))
	if dept.ManagerEmail != mgr.Email {
		return fmt.Errorf("the copy says %q, want %q", dept.ManagerEmail, mgr.Email)
	}

	back, err := m.Get(ctx, "Sales", "000100")
	if err != nil {
		return err
	}
	if back.(dnEmployee).ETag != etag {
		return fmt.Errorf("Write returned ETag %q; the manager reads %q", etag, back.(dnEmployee).ETag)
	}
	env.Say("Write returned the manager's new ETag from the transaction's answer (no read), for a later conditional write")

	_, err = d.Write(ctx, mgr, "Sales", "Marketing")
	env.Say("a copy that does not exist fails the whole transaction, the manager included: %v", err)
	if err == nil {
		return fmt.Errorf("a write to a missing copy succeeded")
	}
	env.Say("copies in other partitions cannot share a transaction: keep them eventually consistent with a queue (see the archive section)")
	return nil
}
