package transfer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/keys"
)

// Checkpoint stores the state of an export, import, copy, purge or count
// so that a later call (in this process or another) can resume it. The
// state is an opaque JSON document of at most a few hundred KiB.
// [NewFileCheckpoint] keeps it in a local file, [NewTableCheckpoint] in an
// entity of a table.
type Checkpoint interface {
	// Load returns the saved state, or nil and no error when nothing was
	// saved.
	Load(ctx context.Context) ([]byte, error)
	// Save stores state in place of the saved one, atomically: after a
	// crash Load returns either the old or the new state, whole.
	Save(ctx context.Context, state []byte) error
}

// ErrCheckpointConflict is returned when a checkpoint was changed by
// another process since this one loaded or saved it: two runs of the same
// job at once. The run stops rather than undo the other's progress.
var ErrCheckpointConflict = errors.New("transfer: the checkpoint was changed by another run of the same job")

// fileCheckpoint is NewFileCheckpoint's Checkpoint.
type fileCheckpoint struct {
	path string
}

// NewFileCheckpoint returns a checkpoint kept in the file at path,
// created on the first save and replaced atomically by each (written to a
// temporary file in the same folder, synced, renamed). A missing file is
// no state.
func NewFileCheckpoint(path string) Checkpoint { return &fileCheckpoint{path: path} }

// Load reads the file; a missing file is no state.
func (c *fileCheckpoint) Load(context.Context) ([]byte, error) {
	b, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transfer: Checkpoint.Load: %w", err)
	}
	return b, nil
}

// Save replaces the file atomically.
func (c *fileCheckpoint) Save(_ context.Context, state []byte) error {
	dir := filepath.Dir(c.path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(c.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("transfer: Checkpoint.Save: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(state)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("transfer: Checkpoint.Save: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // make the rename durable; not every file system can
		d.Close()
	}
	return nil
}

// tableCheckpoint is NewTableCheckpoint's Checkpoint.
type tableCheckpoint struct {
	t   *tablekit.Table[tablekit.Entity]
	job string

	mu   sync.Mutex
	etag azcore.ETag
}

// checkpointPartition is the PartitionKey of the entities of
// NewTableCheckpoint.
const checkpointPartition = "tablekit-checkpoint"

const maxCheckpointParts = 15

// NewTableCheckpoint returns a checkpoint kept in table t (which must
// exist) under the name job, a valid RowKey: one entity of t, so that a
// job run from a serverless function or another machine can resume where
// the last run stopped. The entity has PartitionKey "tablekit-checkpoint"
// and the job's name as RowKey; the state is stored in Binary properties
// of up to 64 KiB each (State0, State1, ...), up to 960 KiB in all, with
// a random SaveID that settles a save whose answer was lost.
//
// Saves are conditional on the entity's ETag once it has been loaded or
// saved: a second run of the same job at once makes one of them fail with
// [ErrCheckpointConflict] instead of both going on.
func NewTableCheckpoint(t *tablekit.Table[tablekit.Entity], job string) (Checkpoint, error) {
	if t == nil {
		return nil, validation("transfer.NewTableCheckpoint", "nil table")
	}
	if err := validKey(job); err != nil {
		return nil, &tablekit.ValidationError{Op: "transfer.NewTableCheckpoint", Property: "job", Detail: err.Error(), Err: tablekit.ErrInvalidKey}
	}
	return &tableCheckpoint{t: t, job: job}, nil
}

// validKey checks a key the way the service does.
func validKey(k string) error {
	if k == "" {
		return errors.New("the job name is empty")
	}
	if n := keys.KeySize(k); n > keys.MaxKeyLen {
		return fmt.Errorf("the job name is %d bytes in UTF-16; a key holds at most %d", n, keys.MaxKeyLen)
	}
	for _, r := range k {
		if r == '/' || r == '\\' || r == '#' || r == '?' || r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return fmt.Errorf("the job name %q has a character keys may not have (/ \\ # ? or a control character)", k)
		}
	}
	return nil
}

// Load reads the checkpoint entity; a missing entity is no state.
func (c *tableCheckpoint) Load(ctx context.Context) ([]byte, error) {
	e, err := c.t.Get(ctx, checkpointPartition, c.job)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n, _ := e.Properties["Parts"].(int32)
	var out []byte
	for i := range int(n) {
		part, ok := e.Properties[fmt.Sprintf("State%d", i)].([]byte)
		if !ok {
			return nil, fmt.Errorf("transfer: Checkpoint.Load: checkpoint %q: part %d of %d is missing: %w", c.job, i, n, ErrCorruptCheckpoint)
		}
		out = append(out, part...)
	}
	c.mu.Lock()
	c.etag = e.ETag
	c.mu.Unlock()
	return out, nil
}

// Save writes the state into the checkpoint entity. Each save carries a
// random SaveID, so that a save whose answer was lost (the service
// applied it; the SDK's retry of the conditional update then met its new
// ETag) is settled by reading the entity back: its own SaveID there means
// it was applied, the ETag it last saved means it was not (it is sent
// again), anything else is another run's write.
func (c *tableCheckpoint) Save(ctx context.Context, state []byte) error {
	const part = limits.PropertyBytes
	parts := (len(state) + part - 1) / part
	if parts > maxCheckpointParts {
		return fmt.Errorf("transfer: Checkpoint.Save: checkpoint %q: the state is %d bytes, more than a table entity holds (%d): %w", c.job, len(state), maxCheckpointParts*part, tablekit.ErrTooLarge)
	}
	id := rand.Text()
	e := tablekit.Entity{PartitionKey: checkpointPartition, RowKey: c.job, Properties: map[string]any{
		"Parts": int32(parts), "Saved": time.Now().UTC(), "SaveID": id,
	}}
	for i := range parts {
		e.Properties[fmt.Sprintf("State%d", i)] = state[i*part : min(len(state), (i+1)*part)]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for try := 1; ; try++ {
		var etag azcore.ETag
		var err error
		if c.etag == "" {
			etag, err = c.t.Upsert(ctx, e)
		} else {
			etag, err = c.t.Update(ctx, e, c.etag)
		}
		if err == nil {
			c.etag = etag
			return nil
		}
		if !errors.Is(err, tablekit.ErrOutcomeUnknown) || ctx.Err() != nil {
			if c.etag != "" && (errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrNotFound)) {
				return fmt.Errorf("transfer: Checkpoint.Save: checkpoint %q: %w", c.job, ErrCheckpointConflict)
			}
			return err
		}
		stored, gerr := c.t.GetSelect(ctx, checkpointPartition, c.job, "SaveID")
		switch {
		case gerr == nil && stored.Properties["SaveID"] == id:
			c.etag = stored.ETag // applied
			return nil
		case gerr != nil && !errors.Is(gerr, tablekit.ErrNotFound):
			return fmt.Errorf("transfer: Checkpoint.Save: checkpoint %q: the save's answer was lost (%v), and reading it back failed: %w", c.job, err, gerr)
		case c.etag != "" && (gerr != nil || stored.ETag != c.etag):
			// Written or deleted since this run's last save, and not by
			// this save.
			return fmt.Errorf("transfer: Checkpoint.Save: checkpoint %q: %w", c.job, ErrCheckpointConflict)
		case try == 3:
			return err
		}
		// Not applied: nothing changed since this run's last save.
	}
}

// ErrCorruptCheckpoint is returned when a saved checkpoint cannot be read
// or belongs to another operation, table or scope.
var ErrCorruptCheckpoint = errors.New("transfer: the checkpoint cannot be used")
