package sections

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/keys"
)

// IndexEntities shows the guide's index entities pattern for a non-unique
// value (every employee named Jones), with its three options: a blob per
// value, an index entity in the employees' partition updated in the same
// transaction, and an index entity in another table kept eventually
// consistent by a queue worker.
func IndexEntities() demo.Section {
	return demo.Section{
		Name:        "indexentities",
		Description: "index entities: all employees named Jones via an index entity (same partition / other table) or a blob",
		Run:         runIndexEntities,
	}
}

func ieIDs(ids []index.ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.RowKey
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func runIndexEntities(ctx context.Context, env *demo.Env) error {
	// Option 2: an index entity in the same partition, same transaction.
	name := env.TableName("IdxEntStaff")
	tbl, err := tablekit.OpenTable[siEmployee](env.Account, name, nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	env.Defer(func(ctx context.Context) error { return tbl.DeleteTable(ctx) })
	local, err := index.NewIntra(tbl, []index.Index[siEmployee]{
		{Name: "lastname", Key: func(e siEmployee) string { return e.LastName }, List: true},
	}, nil)
	if err != nil {
		return err
	}
	env.Say("Option 2: table %s holds the employees and, in the same department partition, one index entity per last name (RowKey lastname!Jones) listing their ids", name)
	before := env.Account.Meter().Snapshot()
	for _, e := range siStaff() {
		if _, err := local.Insert(ctx, e); err != nil {
			return err
		}
	}
	env.Say("hired %d employees: each read the index entity, then inserted the employee and updated the index entity in one transaction, conditional on its ETag (%v)", len(siStaff()), env.Account.Meter().Snapshot().Sub(before))
	ids, err := local.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		return err
	}
	env.Say("the Joneses of Sales: one point query for the index entity gives %s; then one point query per employee", ieIDs(ids))
	raw, err := tablekit.NewTable[tablekit.Entity](tbl.Client(), nil)
	if err != nil {
		return err
	}
	rk, _ := keys.Compound("lastname", "Jones")
	ent, err := raw.Get(ctx, "Sales", rk, nil)
	if err != nil {
		return err
	}
	env.Say("the index entity Sales/%s stores %s=%q and %s=%d (long lists continue in IDs2, IDs3, ... up to 1 MiB)", rk, index.IDsProperty, ent.Properties[index.IDsProperty], index.CountProperty, ent.Properties[index.CountProperty])

	prev, err := local.Get(ctx, "Sales", "000123")
	if err != nil {
		return err
	}
	next := prev
	next.LastName = "Hall"
	if _, err := local.Update(ctx, next, prev.ETag); err != nil {
		return err
	}
	jones, _ := local.IDs(ctx, "Sales", "lastname", "Jones")
	halls, _ := local.IDs(ctx, "Sales", "lastname", "Hall")
	env.Say("Lisa Jones marries Don Hall: one transaction updates her entity and moves her id: Jones %s, Hall %s", ieIDs(jones), ieIDs(halls))
	env.Say("concurrent hirings conflict on the index entity's ETag; the loser re-reads it and retries (IntraOptions.Retry)")

	// Option 3: index entities in another table, through the worker.
	staffName, listName := env.TableName("IdxEntStaffB"), env.TableName("IdxEntLastNames")
	staff, err := tablekit.OpenTable[siEmployee](env.Account, staffName, nil)
	if err != nil {
		return err
	}
	listTbl, err := tablekit.OpenTable[tablekit.Entity](env.Account, listName, nil)
	if err != nil {
		return err
	}
	for _, t := range []interface{ CreateIfNotExists(context.Context) error }{staff, listTbl} {
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
	}
	env.Defer(func(ctx context.Context) error { return errors.Join(staff.DeleteTable(ctx), listTbl.DeleteTable(ctx)) })
	entityList, err := index.NewEntityList(listTbl, nil)
	if err != nil {
		return err
	}
	containerName := env.ContainerName("idxent")
	blobs := env.Account.Container(containerName)
	env.Defer(func(ctx context.Context) error {
		_, err := blobs.Delete(ctx, nil) // created on the first write
		if err != nil && !bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return tablekit.WrapError("DeleteContainer", err)
		}
		return nil
	})
	blobList, err := index.NewBlobList(blobs, nil)
	if err != nil {
		return err
	}
	queue := env.QueueName("idxent")
	client, err := archive.OpenClient(env.Account, queue, nil)
	if err != nil {
		return err
	}
	if _, err := client.Queue().Create(ctx, nil); err != nil {
		return tablekit.WrapError("CreateQueue", err)
	}
	poison := env.Account.Queue(queue + "-p")
	env.Defer(func(ctx context.Context) error {
		_, err := client.Queue().Delete(ctx, nil)
		poison.Delete(ctx, nil)
		return tablekit.WrapError("DeleteQueue", err)
	})
	ix, err := index.NewInter(staff, []index.InterIndex[siEmployee]{
		{Name: "lastname", Key: func(e siEmployee) string { return e.LastName }, List: entityList},
		{Name: "surname", Key: func(e siEmployee) string { return e.LastName }, List: blobList, Global: true},
	}, &index.InterOptions{Queue: client, Delay: 10 * time.Second})
	if err != nil {
		return err
	}
	env.Say("Option 3: employees in %s, index entities in %s (PartitionKey lastname!Sales, RowKey Jones), maintained by a worker on queue %s", staffName, listName, queue)
	env.Say("Option 1: the same lists as blobs in container %s, one per last name for all departments (surname/Jones), updated with ETag conditions", containerName)
	worker, err := archive.NewWorker(client.Queue(), ix, &archive.WorkerOptions{Concurrency: 8, PoisonQueue: poison, MinPollInterval: 50 * time.Millisecond, MaxPollInterval: 250 * time.Millisecond, DrainTimeout: 5 * time.Second})
	if err != nil {
		return err
	}

	before = env.Account.Meter().Snapshot()
	for _, e := range siStaff() {
		if _, err := ix.Upsert(ctx, e); err != nil {
			return err
		}
	}
	cost := env.Account.Meter().Snapshot().Sub(before)
	env.Say("wrote %d employees, 3 transactions each (PutMessage=%d, UpdateEntity=%d); the worker will add each id to its lists",
		len(siStaff()), cost.Count(tablekit.ServiceQueue, "PutMessage"), cost.Count(tablekit.ServiceTable, "UpdateEntity"))
	if ok, err := ix.CaughtUp(ctx, "Sales", "000223"); err != nil || ok {
		return fmt.Errorf("CaughtUp before the worker ran = %v, %v", ok, err)
	}
	env.Say("no worker is running yet: CaughtUp(Sales, 000223) = false, the index does not know Jon yet")
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(wctx) }()
	defer func() { stop(); <-done }()
	if err := siWaitCaughtUp(ctx, ix, siStaff()); err != nil {
		return err
	}
	ids, err = ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		return err
	}
	env.Say("once caught up, the Jones index entity of Sales lists %s", ieIDs(ids))
	ids, err = ix.IDs(ctx, "", "surname", "Jones")
	if err != nil {
		return err
	}
	var all []string
	for _, id := range ids {
		all = append(all, id.String())
	}
	env.Say("the blob %s lists every Jones: %v", blobList.BlobName(index.ListKey{Index: "surname", Value: "Jones"}), all)

	lisa, err := ix.Get(ctx, "Sales", "000123")
	if err != nil {
		return err
	}
	lisa.LastName = "Hall"
	if _, err := ix.Upsert(ctx, lisa); err != nil {
		return err
	}
	if err := siWaitCaughtUp(ctx, ix, []siEmployee{lisa}); err != nil {
		return err
	}
	jones, _ = ix.IDs(ctx, "Sales", "lastname", "Jones")
	halls, _ = ix.IDs(ctx, "Sales", "lastname", "Hall")
	env.Say("Lisa's marriage again: after the worker ran, Jones %s and Hall %s", ieIDs(jones), ieIDs(halls))
	env.Say("an index entity is limited to 1 MiB (64 KiB per property): growing one further fails with ErrTooLarge and points to the blob option, which has no such limit")
	if len(jones) != 2 || len(halls) != 2 {
		return fmt.Errorf("after the move: Jones %v, Hall %v", jones, halls)
	}
	return nil
}
