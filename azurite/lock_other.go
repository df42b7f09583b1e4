//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package azurite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"
)

// staleLock is the age after which a lock file left by a dead process is
// taken over. An npm install of Azurite takes well under this.
const staleLock = 15 * time.Minute

// lockFile takes an exclusive lock by creating the file at path, waiting
// until it can or ctx ends; unlock removes it. A lock file older than
// staleLock is assumed left over by a killed process and removed.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > staleLock {
			os.Remove(path)
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
