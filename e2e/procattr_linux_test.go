package e2e

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd if the test binary dies first
// (a -timeout panic skips t.Cleanup), so no node outlives the test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
