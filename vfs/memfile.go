package vfs

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"
)

// memFile is an open file of a Mem. Like a Unix file descriptor it refers
// to the node, not the name: it keeps working after the file is renamed or
// removed, until Close or a Crash.
type memFile struct {
	m      *Mem
	n      *node
	name   string
	gen    uint64
	off    int64
	read   bool
	write  bool
	append bool
	closed bool
}

var _ File = (*memFile)(nil)

// check returns the error of an operation on a closed or crashed handle.
// The caller holds f.m.mu.
func (f *memFile) check(op string) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case f.gen != f.m.gen:
		return &fs.PathError{Op: op, Path: f.name, Err: ErrCrashed}
	}
	return nil
}

func (f *memFile) lock(op string) error {
	f.m.mu.Lock()
	if err := f.check(op); err != nil {
		f.m.mu.Unlock()
		return err
	}
	return nil
}

func (f *memFile) unlock() { f.m.mu.Unlock() }

// Name implements File.
func (f *memFile) Name() string { return f.name }

// Read implements File.
func (f *memFile) Read(p []byte) (int, error) {
	if err := f.lock("read"); err != nil {
		return 0, err
	}
	defer f.unlock()
	n, err := f.readAt("read", p, f.off)
	f.off += int64(n)
	return n, err
}

// ReadAt implements File.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.lock("read"); err != nil {
		return 0, err
	}
	defer f.unlock()
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	n, err := f.readAt("read", p, off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func (f *memFile) readAt(op string, p []byte, off int64) (int, error) {
	switch {
	case f.n.isDir():
		return 0, &fs.PathError{Op: op, Path: f.name, Err: syscall.EISDIR}
	case !f.read:
		return 0, &fs.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	case len(p) == 0:
		return 0, nil
	case off >= int64(len(f.n.data)):
		return 0, io.EOF
	}
	return copy(p, f.n.data[off:]), nil
}

// Write implements File.
func (f *memFile) Write(p []byte) (int, error) {
	if err := f.lock("write"); err != nil {
		return 0, err
	}
	defer f.unlock()
	if !f.write {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	if f.append {
		f.off = int64(len(f.n.data))
	}
	f.n.writeAt(p, f.off)
	f.off += int64(len(p))
	return len(p), nil
}

// writeAt writes p at off, filling a gap after the end with zeros.
func (n *node) writeAt(p []byte, off int64) {
	end := off + int64(len(p))
	if end > int64(len(n.data)) {
		if end > int64(cap(n.data)) {
			grown := make([]byte, len(n.data), max(end, 2*int64(cap(n.data))))
			copy(grown, n.data)
			n.data = grown
		}
		clear(n.data[len(n.data):end])
		n.data = n.data[:end]
	}
	copy(n.data[off:], p)
}

// Seek implements File.
func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	if err := f.lock("seek"); err != nil {
		return 0, err
	}
	defer f.unlock()
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.n.data))
	case io.SeekStart:
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: syscall.EINVAL}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: syscall.EINVAL}
	}
	f.off = offset
	return offset, nil
}

// Sync implements File. On a directory it is SyncDir, as fsync(2) of a
// directory is on Linux.
func (f *memFile) Sync() error {
	if err := f.lock("sync"); err != nil {
		return err
	}
	defer f.unlock()
	if f.n.isDir() {
		f.m.syncDir(f.n)
	} else {
		f.n.syncData()
	}
	return nil
}

// Stat implements File.
func (f *memFile) Stat() (fs.FileInfo, error) {
	if err := f.lock("stat"); err != nil {
		return nil, err
	}
	defer f.unlock()
	return f.n.info(filepath.Base(f.name)), nil
}

// Truncate implements File.
func (f *memFile) Truncate(size int64) error {
	if err := f.lock("truncate"); err != nil {
		return err
	}
	defer f.unlock()
	if size < 0 || !f.write || f.n.isDir() {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	if size <= int64(len(f.n.data)) {
		f.n.data = f.n.data[:size:size] // a later write must not see the old tail
		return nil
	}
	f.n.writeAt(nil, size)
	return nil
}

// Close implements File.
func (f *memFile) Close() error {
	if err := f.lock("close"); err != nil {
		f.m.mu.Lock()
		f.closed = true
		f.m.mu.Unlock()
		return err
	}
	defer f.unlock()
	f.closed = true
	return nil
}
