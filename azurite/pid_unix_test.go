//go:build unix

package azurite_test

import (
	"errors"
	"syscall"
)

// processGone reports whether neither the process pid nor any member of
// its process group exists.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) &&
		errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
}
