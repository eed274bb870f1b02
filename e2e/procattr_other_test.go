//go:build !linux

package e2e

import "os/exec"

// dieWithParent is a no-op where the kernel offers no parent-death signal;
// t.Cleanup still kills the nodes unless the test binary itself dies.
func dieWithParent(cmd *exec.Cmd) {}
