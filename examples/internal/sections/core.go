package sections

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
)

// Employee is the design guide's running example.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
	FirstName  string
	LastName   string
	Email      string
	Age        int       `table:"Age,omitempty"`
	Hired      time.Time `table:"Hired,omitempty"`
}

// openTable creates a table for a section and registers its removal.
func openTable[T any](ctx context.Context, env *demo.Env, base string) (*tablekit.Table[T], error) {
	name := env.TableName(base)
	tbl, err := tablekit.OpenTable[T](env.Account, name, nil)
	if err != nil {
		return nil, err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return nil, err
	}
	env.Say("created table %s", name)
	env.Defer(func(ctx context.Context) error { return tbl.DeleteTable(ctx) })
	return tbl, nil
}

// cost runs f and returns the storage transactions it cost.
func cost(env *demo.Env, f func() error) (int64, error) {
	before := env.Account.Meter().Snapshot()
	err := f()
	return env.Account.Meter().Snapshot().Sub(before).Total(), err
}
