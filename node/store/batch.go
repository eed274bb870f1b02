package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/vfs"
)

// Batch makes many writes durable at once. A step writes its files
// without syncing them and notes each file and each directory whose
// entries it changed; Flush then fsyncs every file concurrently, renames
// the files written atomically into place, and syncs every noted directory
// once, concurrently. Concurrent fsyncs share the file system's journal
// commits, so N files cost little more than one fsync (BenchmarkDiskSync
// measures it), where N sequential WriteFiles cost 2N.
//
// Nothing a batch wrote may be trusted before Flush returns nil: the
// caller writes the record that makes it trusted after the flush.
type Batch struct {
	files   []string
	renames [][2]string // temp -> final, done after the files are synced
	dirs    map[string]bool
}

// SyncWorkers bounds the concurrent fsyncs of a Flush.
const SyncWorkers = 8

// File notes a file to fsync.
func (b *Batch) File(path string) { b.files = append(b.files, path) }

// Dir notes a directory whose entries changed.
func (b *Batch) Dir(path string) {
	if b.dirs == nil {
		b.dirs = map[string]bool{}
	}
	b.dirs[filepath.Clean(path)] = true
}

// Created notes a new entry: its directory must be synced.
func (b *Batch) Created(path string) { b.Dir(filepath.Dir(path)) }

var batchSeq atomic.Uint64

// WriteAtomic writes data to a temporary file beside name now; flush
// syncs it, then renames it over name and syncs the directory, so that
// name holds its old or its new content after a crash, never a mix.
func (b *Batch) WriteAtomic(fsys vfs.FS, name string, data []byte, perm fs.FileMode) error {
	tmp := filepath.Join(filepath.Dir(name), vfs.TempPrefix+filepath.Base(name)+"-b"+strconv.FormatUint(batchSeq.Add(1), 36))
	if err := WriteNew(fsys, tmp, data, perm); err != nil {
		return err
	}
	b.files = append(b.files, tmp)
	b.renames = append(b.renames, [2]string{tmp, name})
	b.Dir(filepath.Dir(name))
	return nil
}

// RenameAfterSync notes a file written unsynced: Flush syncs it, then
// renames it to name and syncs name's directory. The directory it leaves
// is not synced: the caller removes that directory whole, after a crash
// too, so an old entry left in it after a crash is never read.
func (b *Batch) RenameAfterSync(tmp, name string) {
	b.files = append(b.files, tmp)
	b.renames = append(b.renames, [2]string{tmp, name})
	b.Dir(filepath.Dir(name))
}

// WriteNew creates name (which must not exist) holding data, unsynced.
func WriteNew(fsys vfs.FS, name string, data []byte, perm fs.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(name)
	}
	return err
}

// Flush makes everything noted durable: files, then renames, then
// directories. The batch is empty afterwards, whatever the outcome.
func (b *Batch) Flush(fsys vfs.FS) error {
	files, renames, dirs := b.files, b.renames, b.dirs
	*b = Batch{}
	errs := make([]error, len(files))
	par.Do(len(files), SyncWorkers, func(i int) { errs[i] = SyncFile(fsys, files[i]) })
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	for _, r := range renames {
		if err := fsys.Rename(r[0], r[1]); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
	}
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		// A noted directory that is gone was removed after its change: its
		// removal is noted on its parent, which is synced instead.
		if fi, err := fsys.Lstat(d); err == nil && fi.IsDir() {
			list = append(list, d)
		}
	}
	sort.Strings(list)
	errs = make([]error, len(list))
	par.Do(len(list), SyncWorkers, func(i int) { errs[i] = fsys.SyncDir(list[i]) })
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// SyncFile fsyncs the file name.
func SyncFile(fsys vfs.FS, name string) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
