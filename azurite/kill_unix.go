//go:build unix

package azurite

import (
	"os/exec"
	"syscall"
)

// killTree sends SIGKILL to cmd's process group, which setProcAttr made.
func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Process.Kill()
}
