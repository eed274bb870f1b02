package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd (a node, the rsync daemon) if
// the bench dies first.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
