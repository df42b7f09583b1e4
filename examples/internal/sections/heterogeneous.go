package sections

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/patterns"
)

// Heterogeneous shows heterogeneous entity types: departments and
// employees in one partition, each row decoded into its own Go type.
func Heterogeneous() demo.Section {
	return demo.Section{
		Name:        "heterogeneous",
		Description: "heterogeneous entity types: departments and employees in one partition, typed by EntityType or RowKey prefix",
		Run:         runHeterogeneous,
	}
}

type hetDepartment struct {
	Name          string      `table:",pk"`
	Key           string      `table:",rk"`
	Manager       string      `table:"Manager"`
	EmployeeCount int         `table:"EmployeeCount"`
	ETag          azcore.ETag `table:",etag"`
}

type hetEmployee struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Name       string `table:"Name"`
	Email      string `table:"Email"`
}

// hetEmployeeV2 is version 2 of the Employee kind: the name split in two.
type hetEmployeeV2 struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	First      string `table:"First"`
	Last       string `table:"Last"`
	Email      string `table:"Email"`
}

func hetRegistry(by patterns.Discriminator) (*patterns.Registry, error) {
	r := patterns.NewRegistry(&patterns.RegistryOptions{Discriminator: by})
	for _, err := range []error{
		patterns.Register[hetDepartment](r, "Department", 1),
		patterns.Register[hetEmployee](r, "Employee", 1),
		patterns.Register[hetEmployeeV2](r, "Employee", 2),
	} {
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

func runHeterogeneous(ctx context.Context, env *demo.Env) error {
	tbl, err := patEntityTable(ctx, env, "Heterogeneous")
	if err != nil {
		return err
	}
	meter := env.Account.Meter()
	reg, err := hetRegistry(patterns.ByProperty)
	if err != nil {
		return err
	}
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		return err
	}
	env.Say("departments and their employees share a partition, so one transaction can change both; each row carries EntityType = kind.vN")
	for _, v := range []any{
		hetDepartment{Name: "Sales", Key: "Sales", Manager: "Ann", EmployeeCount: 2},
		hetEmployee{Department: "Sales", Key: "000100", Name: "Ann Jones", Email: "ann@contoso.com"},
		hetEmployeeV2{Department: "Sales", Key: "000101", First: "Bob", Last: "Smith", Email: "bob@contoso.com"},
		tablekit.Entity{PartitionKey: "Sales", RowKey: "Q3-goals", Properties: map[string]any{"EntityType": "Goal.v1", "Target": 1.5e6}},
	} {
		if _, err := m.Insert(ctx, v); err != nil {
			return err
		}
	}

	before := meter.Snapshot()
	for v, err := range m.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			return err
		}
		switch x := v.(type) {
		case hetDepartment:
			env.Say("  Department %s: manager %s, %d employees", x.Key, x.Manager, x.EmployeeCount)
		case hetEmployee:
			env.Say("  Employee v1 %s: %s", x.Key, x.Name)
		case hetEmployeeV2:
			env.Say("  Employee v2 %s: %s %s", x.Key, x.First, x.Last)
		case tablekit.Entity:
			env.Say("  unregistered kind %v at %s, kept as a tablekit.Entity", x.Properties["EntityType"], x.RowKey)
		}
	}
	env.Say("one query decoded the mixed partition, each row into its own type: %v", meter.Snapshot().Sub(before))

	v, err := m.Get(ctx, "Sales", "Sales")
	if err != nil {
		return err
	}
	dept := v.(hetDepartment)
	dept.EmployeeCount++
	before = meter.Snapshot()
	etags, err := m.Transaction(ctx,
		tablekit.InsertAction[any](hetEmployeeV2{Department: "Sales", Key: "000102", First: "Cy", Last: "Young", Email: "cy@contoso.com"}),
		tablekit.UpdateAction[any](dept, tablekit.Merge, dept.ETag))
	if err != nil {
		return err
	}
	env.Say("a new employee and the department's count in one entity group transaction: %v", meter.Snapshot().Sub(before))
	dept.ETag = etags[1]
	dept.Manager = "Bob"
	if _, err := m.Update(ctx, dept, tablekit.Merge, dept.ETag); err != nil {
		return err
	}
	env.Say("the transaction returned each action's new ETag, so the department is updated again conditionally without reading it first")

	// The other option of the guide: the kind as the RowKey's prefix.
	tbl2, err := patEntityTable(ctx, env, "HeterogeneousRK")
	if err != nil {
		return err
	}
	reg2, err := hetRegistry(patterns.ByRowKeyPrefix)
	if err != nil {
		return err
	}
	m2, err := patterns.NewMixed(tbl2, reg2)
	if err != nil {
		return err
	}
	deptKey, _ := reg2.RowKey("Department", "Sales")
	if _, err := m2.Insert(ctx, hetDepartment{Name: "Sales", Key: deptKey, Manager: "Ann", EmployeeCount: 3}); err != nil {
		return err
	}
	for i, name := range []string{"Ann Jones", "Bob Smith", "Cy Young"} {
		k, err := reg2.RowKey("Employee", fmt.Sprintf("%06d", 100+i))
		if err != nil {
			return err
		}
		if _, err := m2.Insert(ctx, hetEmployee{Department: "Sales", Key: k, Name: name}); err != nil {
			return err
		}
	}
	before = meter.Snapshot()
	var names []string
	for e, err := range patterns.QueryKind[hetEmployee](ctx, m2, "Sales", nil) {
		if err != nil {
			return err
		}
		names = append(names, e.Key+"="+e.Name)
	}
	env.Say("with RowKey = kind!id, the employees of a department are one prefix range query: %v (%v)", names, meter.Snapshot().Sub(before))
	if len(names) != 3 {
		return fmt.Errorf("read %d employees, want 3", len(names))
	}
	return nil
}
