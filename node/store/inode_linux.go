package store

import (
	"io/fs"
	"syscall"
)

// InodeOf returns the file's inode number and change time (which every
// write and chmod moves, unlike the modification time), or zeros if the
// FS does not say.
func InodeOf(fi fs.FileInfo) (ino uint64, ctime int64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, st.Ctim.Nano()
	}
	return 0, 0
}

// linkCount returns the number of hard links to the file, or 0 if the FS
// does not say.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
