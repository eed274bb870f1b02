//go:build !linux

package store

import "io/fs"

// InodeOf returns zeros: the stat cache then relies on size, mode and
// modification time.
func InodeOf(fs.FileInfo) (uint64, int64) { return 0, 0 }

// linkCount returns 0: the link count is not read on this system.
func linkCount(fs.FileInfo) uint64 { return 0 }
