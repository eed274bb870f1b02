//go:build !unix

package capsule

import "github.com/agentcapsule/capsule/vfs"

// tryShared has no cross-process lock to probe on this system.
func tryShared(vfs.File) error { return nil }
