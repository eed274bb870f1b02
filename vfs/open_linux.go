package vfs

import (
	"io/fs"
	"os"
	"syscall"
)

// openFile opens name as os.OpenFile does, without registering the file
// with the runtime's network poller. os.OpenFile tries to on every open:
// two fcntl calls to set O_NONBLOCK, an epoll_ctl that fails for a regular
// file or a directory, and two more fcntl calls to clear it again, five
// system calls that cost as much as the open itself when a snapshot or an
// import opens a hundred thousand small files. A file opened here reads and
// writes in blocking mode, which is what a regular file does anyway; it
// only lacks deadlines, which no caller of an FS sets.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, unixMode(perm))
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != syscall.EINTR {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

// unixMode converts perm to the mode bits of open(2), as os.OpenFile does.
func unixMode(perm fs.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		m |= syscall.S_ISUID
	}
	if perm&fs.ModeSetgid != 0 {
		m |= syscall.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		m |= syscall.S_ISVTX
	}
	return m
}
