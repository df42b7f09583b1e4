//go:build linux

package azurite

import (
	"os/exec"
	"syscall"
)

// setProcAttr starts cmd in a process group of its own, so that Stop can
// kill everything it started, and has the kernel kill it with SIGKILL when
// the process that started it dies (e.g. an interrupted test binary).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
