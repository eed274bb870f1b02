package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback queues every dirty page of f for writing
// (SYNC_FILE_RANGE_WRITE over the whole file) without waiting for it.
func startWriteback(f *os.File) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := sc.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	}); err != nil { // the only failure: the file is closed
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: os.ErrClosed}
	}
	if serr != nil {
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: serr}
	}
	return nil
}
