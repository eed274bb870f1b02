package vfs

import (
	"io/fs"
	"os"
	"syscall"
)

// OS is the host's file system.
type OS struct{}

var _ FS = OS{}

// OpenFile implements FS.
func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Open implements FS.
func (OS) Open(name string) (File, error) {
	f, err := openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Remove implements FS.
func (OS) Remove(name string) error { return os.Remove(name) }

// RemoveAll implements FS.
func (OS) RemoveAll(name string) error { return os.RemoveAll(name) }

// Rename implements FS with the semantics of rename(2): a file replaces a
// file and a directory replaces an empty directory. (os.Rename refuses to
// replace any directory; the interface promises the POSIX behaviour that Mem
// also has.)
func (OS) Rename(oldname, newname string) error {
	if err := syscall.Rename(oldname, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

// Mkdir implements FS.
func (OS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }

// MkdirAll implements FS.
func (OS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }

// ReadDir implements FS.
func (OS) ReadDir(name string) ([]fs.DirEntry, error) {
	return os.ReadDir(name) // sorted by name
}

// Stat implements FS.
func (OS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Lstat implements FS.
func (OS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// Symlink implements FS.
func (OS) Symlink(oldname, newname string) error { return os.Symlink(oldname, newname) }

// Readlink implements FS.
func (OS) Readlink(name string) (string, error) { return os.Readlink(name) }

// Chmod implements FS.
func (OS) Chmod(name string, mode fs.FileMode) error { return os.Chmod(name, mode) }

// SyncDir implements FS. It opens the directory and fsyncs it, which is what
// makes a rename or a new entry survive a power loss on Linux.
func (OS) SyncDir(name string) error {
	d, err := openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	if fi, serr := d.Stat(); serr == nil && !fi.IsDir() {
		d.Close()
		return &fs.PathError{Op: "syncdir", Path: name, Err: syscall.ENOTDIR}
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
