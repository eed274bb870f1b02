//go:build !linux

package node

import "io/fs"

// inodeOf returns zeros: the stat cache then relies on size, mode and
// modification time.
func inodeOf(fs.FileInfo) (uint64, int64) { return 0, 0 }

// linkCount returns 0: the link count is not read on this system.
func linkCount(fs.FileInfo) uint64 { return 0 }
