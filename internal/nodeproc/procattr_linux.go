//go:build linux

package nodeproc

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill cmd when this process dies, so that
// no node (or daemon) outlives a killed test or benchmark.
func DieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
