//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// errLinuxOnly is why no sandbox works on other systems.
var errLinuxOnly = errors.New("sandbox: bwrap and Landlock exist on Linux only")

const termGrace = 2 * time.Second

type cgroups struct{}

func (*cgroups) remove() {}

type pending struct{ cg *cgroups }

func cgroupParents() []string                 { return nil }
func landlockABI() (int, error)               { return 0, errLinuxOnly }
func dieWithParent() *syscall.SysProcAttr     { return nil }
func (s *Sandbox) direct(string, Policy) bool { return false }

func (s *Sandbox) directCommand(context.Context, Policy, []string) (*exec.Cmd, error) {
	return nil, errLinuxOnly
}

func supervise(config) int { return setupFailed(errLinuxOnly) }
func inner(config) int     { return setupFailed(errLinuxOnly) }
func execStage(config) int { return setupFailed(errLinuxOnly) }

func (*pending) closeFiles() {}

// Release does nothing here: no command runs.
func (s *Sandbox) Release(*exec.Cmd) {}
