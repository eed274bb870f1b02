package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
)

var tempSeq atomic.Uint64

// TempPrefix starts the name of every temporary file WriteFile creates, so a
// reader can recognise and remove leftovers of a crash.
const TempPrefix = ".tmp-"

// WriteFile writes data to name atomically and durably: a temporary file in
// the same directory, fsync, rename over name, fsync of the directory. After a
// crash name holds either its old contents or data, never a mix.
func WriteFile(fsys FS, name string, data []byte, perm fs.FileMode) error {
	return WriteFileFrom(fsys, name, bytes.NewReader(data), perm)
}

// WriteFileFrom is WriteFile for a stream.
func WriteFileFrom(fsys FS, name string, r io.Reader, perm fs.FileMode) error {
	_, err := writeFileFrom(fsys, name, r, perm)
	return err
}

// WriteFileFromN is WriteFileFrom that also reports how many bytes it wrote.
func WriteFileFromN(fsys FS, name string, r io.Reader, perm fs.FileMode) (int64, error) {
	return writeFileFrom(fsys, name, r, perm)
}

func writeFileFrom(fsys FS, name string, r io.Reader, perm fs.FileMode) (int64, error) {
	dir := filepath.Dir(name)
	f, tmp, err := createTemp(fsys, name, perm)
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", name, err)
	}
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Chmod(tmp, perm)
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return n, fmt.Errorf("write %s: %w", name, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return n, fmt.Errorf("write %s: sync dir: %w", name, err)
	}
	return n, nil
}

// maxTempTries bounds the search for a free temporary name.
const maxTempTries = 1000

// createTemp creates a new temporary file next to name. The sequence number
// restarts with every process, so a leftover of an earlier crash may hold
// the next name; createTemp then moves on to the following one.
func createTemp(fsys FS, name string, perm fs.FileMode) (File, string, error) {
	prefix := filepath.Join(filepath.Dir(name), TempPrefix+filepath.Base(name)+"-")
	for i := 0; ; i++ {
		tmp := prefix + strconv.FormatUint(tempSeq.Add(1), 36)
		f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil || !errors.Is(err, fs.ErrExist) || i == maxTempTries {
			return f, tmp, err
		}
	}
}

// ReadFile reads the whole of name.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// MkdirAllDurable creates dir and its missing parents and fsyncs every parent
// whose entries changed, so the new directories survive a crash. A dir that
// already exists is taken as durable. A non-directory in the way is ENOTDIR.
func MkdirAllDurable(fsys FS, dir string, perm fs.FileMode) error {
	if fi, err := fsys.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAllDurable(fsys, parent, perm); err != nil {
			return err
		}
	}
	if err := fsys.Mkdir(dir, perm); err != nil && !os.IsExist(err) {
		return err
	}
	return fsys.SyncDir(parent)
}
