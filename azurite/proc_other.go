//go:build !unix

package azurite

import "os/exec"

// setProcAttr has nothing to set where there are no process groups.
func setProcAttr(cmd *exec.Cmd) {}

// killTree kills cmd's process. Azurite runs as one node process, so this
// leaves nothing behind.
func killTree(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}
