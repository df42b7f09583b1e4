//go:build unix && !linux

package azurite

import (
	"os/exec"
	"syscall"
)

// setProcAttr starts cmd in a process group of its own, so that Stop can
// kill everything it started. (Only Linux can also tie its life to ours.)
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
