//go:build !unix

package azurite_test

import "os"

// processGone reports whether the process pid no longer exists.
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	p.Release()
	return false
}
