package vfs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// ErrNoSpace is a full disk (ENOSPC), for Faulty.Fail. Faulty wraps it, as
// every injected error, in an *fs.PathError (or *os.LinkError for rename)
// naming the operation and path, so errors.Is(err, ErrNoSpace) and
// errors.Is(err, syscall.ENOSPC) both hold.
var ErrNoSpace error = syscall.ENOSPC

// ErrIO is an I/O error (EIO), for Faulty.Fail; see ErrNoSpace.
var ErrIO error = syscall.EIO

// Op names an operation of FS or File in Faulty rules and records.
type Op string

// The operations Faulty tells apart. Several methods share one Op.
const (
	OpAny      Op = ""         // in a rule: every operation
	OpOpen     Op = "open"     // Open, OpenFile without O_CREATE
	OpCreate   Op = "create"   // OpenFile with O_CREATE
	OpRead     Op = "read"     // File.Read, File.ReadAt
	OpWrite    Op = "write"    // File.Write
	OpSeek     Op = "seek"     // File.Seek
	OpSync     Op = "sync"     // File.Sync
	OpTruncate Op = "truncate" // File.Truncate
	OpClose    Op = "close"    // File.Close
	OpStat     Op = "stat"     // Stat, Lstat, File.Stat
	OpReadDir  Op = "readdir"  // ReadDir
	OpRename   Op = "rename"   // Rename; rules match the old or the new path
	OpSyncDir  Op = "syncdir"  // SyncDir
	// OpSyncFiles is SyncFiles of a batch of files: one durable step.
	OpSyncFiles Op = "syncfiles"
	OpMkdir     Op = "mkdir"    // Mkdir, MkdirAll
	OpRemove    Op = "remove"   // Remove, RemoveAll
	OpSymlink   Op = "symlink"  // Symlink; the path is the new link
	OpReadlink  Op = "readlink" // Readlink
	OpChmod     Op = "chmod"    // Chmod
	// OpWriteback is StartWriteback of a File: advisory, not a durable step.
	OpWriteback Op = "writeback"
)

// Durable reports whether op is a durable step: a point where a crash can
// leave a different state behind (File.Sync, SyncFiles, SyncDir) or where
// a real file system may persist a change on its own (Rename).
func (op Op) Durable() bool {
	return op == OpSync || op == OpSyncFiles || op == OpSyncDir || op == OpRename
}

// OpRecord is one operation seen by a Faulty.
type OpRecord struct {
	Op       Op
	Path     string // as the caller passed it (for a File, the name it was opened with)
	NewPath  string // Rename's new name; empty otherwise
	Err      error  // the error returned to the caller, nil before the op ran
	Injected bool   // Err came from a rule or the OnOp hook
}

// String renders r as "op path[ -> newpath][: err]".
func (r OpRecord) String() string {
	s := string(r.Op) + " " + r.Path
	if r.NewPath != "" {
		s += " -> " + r.NewPath
	}
	if r.Err != nil {
		s += ": " + r.Err.Error()
	}
	return s
}

// Faulty wraps an FS and fails chosen operations, for testing error paths.
// Rules added with Fail pick operations by Op and path pattern; the OnOp hook
// sees every operation before it runs; Ops lists what happened. Files opened
// through a Faulty are wrapped too, so their Read, Write, Sync and Close are
// subject to the same rules. Faulty is safe for concurrent use.
type Faulty struct {
	inner FS

	mu    sync.Mutex
	rules []*Rule
	hook  func(OpRecord) error
	log   []OpRecord
}

var _ FS = (*Faulty)(nil)

// NewFaulty returns a Faulty that passes every operation to inner until
// told otherwise.
func NewFaulty(inner FS) *Faulty {
	return &Faulty{inner: inner}
}

// Rule is one failure rule of a Faulty, returned by Fail.
type Rule struct {
	f       *Faulty
	op      Op
	pattern string
	err     error
	skip    int  // matching calls to let through first
	times   int  // failures to inject, 0 for no limit
	after   bool // run the operation, then fail
	calls   int  // matching calls seen
	hits    int  // failures injected
}

// FailOption refines a rule given to Fail.
type FailOption func(*Rule)

// Nth fails only the nth matching call, counting from 1.
func Nth(n int) FailOption {
	return func(r *Rule) { r.skip, r.times = n-1, 1 }
}

// Times fails the first n matching calls and lets later ones through.
func Times(n int) FailOption {
	return func(r *Rule) { r.times = n }
}

// Once fails the first matching call only.
func Once() FailOption { return Times(1) }

// AfterEffect lets the operation run and then reports the error, as when a
// reply is lost: the write reached the disk, the rename happened, the file
// was created, yet the caller sees a failure. A file opened this way is
// closed again.
func AfterEffect() FailOption {
	return func(r *Rule) { r.after = true }
}

// Fail adds a rule: operations op (OpAny for all) on a path matching pattern
// fail with err. By default every matching call fails; see Nth, Times, Once
// and AfterEffect. The first rule that fires wins.
//
// Patterns use path.Match syntax on the cleaned, slash-separated path. A
// pattern matches a path if it matches the path or one of its parent
// directories, so "/cap/artifacts" covers everything below it. A pattern
// without a separator is matched against each component instead, like
// find -name: "manifest.json" matches "/a/manifest.json", ".tmp-*" matches
// every temporary file of WriteFile. The empty pattern matches every path.
//
// A bare err (say ErrNoSpace) is wrapped in an *fs.PathError or, for rename,
// an *os.LinkError, as the OS does; an err that already is one
// is returned as is.
func (f *Faulty) Fail(op Op, pattern string, err error, opts ...FailOption) *Rule {
	r := &Rule{f: f, op: op, pattern: pattern, err: err}
	for _, o := range opts {
		o(r)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, r)
	return r
}

// Hits reports how many failures the rule has injected, so a test can check
// that its fault was actually reached.
func (r *Rule) Hits() int {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return r.hits
}

// Clear removes every rule. The hook and the record stay.
func (f *Faulty) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// OnOp sets a hook called before every operation, with the record of the
// operation about to run (Err is nil). If the hook returns an error the
// operation does not run and fails with that error, wrapped like the errors
// of Fail. The hook runs without Faulty's lock held, so it may call Fail, or
// Crash on the Mem below. Pass nil to remove the hook.
func (f *Faulty) OnOp(hook func(rec OpRecord) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
}

// Ops returns a copy of the record of every operation so far, in order.
func (f *Faulty) Ops() []OpRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]OpRecord(nil), f.log...)
}

// DurableOps returns the operations of Ops that are durable steps.
func (f *Faulty) DurableOps() []OpRecord {
	var out []OpRecord
	for _, r := range f.Ops() {
		if r.Op.Durable() {
			out = append(out, r)
		}
	}
	return out
}

// ResetOps forgets the operations recorded so far.
func (f *Faulty) ResetOps() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = nil
}

// run performs one operation: the hook, then the rules, then fn (the inner
// operation) unless a failure comes first, then the record.
func (f *Faulty) run(rec OpRecord, fn func() error) error {
	inj, after := f.decide(rec)
	var err error
	if inj == nil || after {
		err = fn()
	}
	if inj != nil {
		err = wrapErr(rec, inj)
		rec.Injected = true
	}
	rec.Err = err
	f.mu.Lock()
	f.log = append(f.log, rec)
	f.mu.Unlock()
	return err
}

// decide returns the error to inject into rec, if any, and whether to run
// the operation first.
func (f *Faulty) decide(rec OpRecord) (error, bool) {
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(rec); err != nil {
			return err, false
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if !r.matches(rec) {
			continue
		}
		r.calls++
		if r.calls > r.skip && (r.times == 0 || r.hits < r.times) {
			r.hits++
			return r.err, r.after
		}
	}
	return nil, false
}

func (r *Rule) matches(rec OpRecord) bool {
	if r.op != OpAny && r.op != rec.Op {
		return false
	}
	return matchPath(r.pattern, rec.Path) || rec.NewPath != "" && matchPath(r.pattern, rec.NewPath)
}

// matchPath reports whether pattern matches name or one of its parents; see
// Fail.
func matchPath(pattern, name string) bool {
	if pattern == "" {
		return true
	}
	name = filepath.ToSlash(filepath.Clean(name))
	component := !strings.Contains(pattern, "/")
	for {
		subject := name
		if component {
			subject = path.Base(name)
		}
		if ok, _ := path.Match(pattern, subject); ok {
			return true
		}
		parent := path.Dir(name)
		if parent == name {
			return false
		}
		name = parent
	}
}

// wrapErr gives an injected error the type the OS would return.
func wrapErr(rec OpRecord, err error) error {
	switch err.(type) {
	case *fs.PathError, *os.LinkError:
		return err
	}
	if rec.Op == OpRename {
		return &os.LinkError{Op: string(rec.Op), Old: rec.Path, New: rec.NewPath, Err: err}
	}
	return &fs.PathError{Op: string(rec.Op), Path: rec.Path, Err: err}
}

// OpenFile implements FS.
func (f *Faulty) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	op := OpOpen
	if flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	var file File
	err := f.run(OpRecord{Op: op, Path: name}, func() (err error) {
		file, err = f.inner.OpenFile(name, flag, perm)
		return err
	})
	if err != nil {
		if file != nil {
			file.Close()
		}
		return nil, err
	}
	return &faultyFile{f: f, inner: file, name: name}, nil
}

// Open implements FS.
func (f *Faulty) Open(name string) (File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

// Remove implements FS.
func (f *Faulty) Remove(name string) error {
	return f.run(OpRecord{Op: OpRemove, Path: name}, func() error { return f.inner.Remove(name) })
}

// RemoveAll implements FS.
func (f *Faulty) RemoveAll(name string) error {
	return f.run(OpRecord{Op: OpRemove, Path: name}, func() error { return f.inner.RemoveAll(name) })
}

// Rename implements FS.
func (f *Faulty) Rename(oldname, newname string) error {
	return f.run(OpRecord{Op: OpRename, Path: oldname, NewPath: newname}, func() error {
		return f.inner.Rename(oldname, newname)
	})
}

// Mkdir implements FS.
func (f *Faulty) Mkdir(name string, perm fs.FileMode) error {
	return f.run(OpRecord{Op: OpMkdir, Path: name}, func() error { return f.inner.Mkdir(name, perm) })
}

// MkdirAll implements FS.
func (f *Faulty) MkdirAll(name string, perm fs.FileMode) error {
	return f.run(OpRecord{Op: OpMkdir, Path: name}, func() error { return f.inner.MkdirAll(name, perm) })
}

// ReadDir implements FS.
func (f *Faulty) ReadDir(name string) ([]fs.DirEntry, error) {
	var ents []fs.DirEntry
	err := f.run(OpRecord{Op: OpReadDir, Path: name}, func() (err error) {
		ents, err = f.inner.ReadDir(name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ents, nil
}

// Stat implements FS.
func (f *Faulty) Stat(name string) (fs.FileInfo, error) {
	return f.stat(name, f.inner.Stat)
}

// Lstat implements FS.
func (f *Faulty) Lstat(name string) (fs.FileInfo, error) {
	return f.stat(name, f.inner.Lstat)
}

func (f *Faulty) stat(name string, stat func(string) (fs.FileInfo, error)) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := f.run(OpRecord{Op: OpStat, Path: name}, func() (err error) {
		fi, err = stat(name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return fi, nil
}

// Symlink implements FS.
func (f *Faulty) Symlink(oldname, newname string) error {
	return f.run(OpRecord{Op: OpSymlink, Path: newname}, func() error {
		return f.inner.Symlink(oldname, newname)
	})
}

// Readlink implements FS.
func (f *Faulty) Readlink(name string) (string, error) {
	var target string
	err := f.run(OpRecord{Op: OpReadlink, Path: name}, func() (err error) {
		target, err = f.inner.Readlink(name)
		return err
	})
	if err != nil {
		return "", err
	}
	return target, nil
}

// Chmod implements FS.
func (f *Faulty) Chmod(name string, mode fs.FileMode) error {
	return f.run(OpRecord{Op: OpChmod, Path: name}, func() error { return f.inner.Chmod(name, mode) })
}

// SyncDir implements FS.
func (f *Faulty) SyncDir(name string) error {
	return f.run(OpRecord{Op: OpSyncDir, Path: name}, func() error { return f.inner.SyncDir(name) })
}

// faultyFile is a File opened through a Faulty.
type faultyFile struct {
	f     *Faulty
	inner File
	name  string
}

func (ff *faultyFile) run(op Op, fn func() error) error {
	return ff.f.run(OpRecord{Op: op, Path: ff.name}, fn)
}

// Name implements File.
func (ff *faultyFile) Name() string { return ff.inner.Name() }

// Read implements File.
func (ff *faultyFile) Read(p []byte) (n int, err error) {
	err = ff.run(OpRead, func() (err error) {
		n, err = ff.inner.Read(p)
		return err
	})
	return n, err
}

// ReadAt implements File.
func (ff *faultyFile) ReadAt(p []byte, off int64) (n int, err error) {
	err = ff.run(OpRead, func() (err error) {
		n, err = ff.inner.ReadAt(p, off)
		return err
	})
	return n, err
}

// Write implements File.
func (ff *faultyFile) Write(p []byte) (n int, err error) {
	err = ff.run(OpWrite, func() (err error) {
		n, err = ff.inner.Write(p)
		return err
	})
	return n, err
}

// Seek implements File.
func (ff *faultyFile) Seek(offset int64, whence int) (off int64, err error) {
	err = ff.run(OpSeek, func() (err error) {
		off, err = ff.inner.Seek(offset, whence)
		return err
	})
	return off, err
}

// Sync implements File.
func (ff *faultyFile) Sync() error {
	return ff.run(OpSync, ff.inner.Sync)
}

// Stat implements File.
func (ff *faultyFile) Stat() (fi fs.FileInfo, err error) {
	err = ff.run(OpStat, func() (err error) {
		fi, err = ff.inner.Stat()
		return err
	})
	if err != nil {
		return nil, err
	}
	return fi, nil
}

// Truncate implements File.
func (ff *faultyFile) Truncate(size int64) error {
	return ff.run(OpTruncate, func() error { return ff.inner.Truncate(size) })
}

// Close implements File. The inner file is closed even when the close is
// failed before it runs, so a test does not leak descriptors.
func (ff *faultyFile) Close() error {
	ran := false
	err := ff.run(OpClose, func() error {
		ran = true
		return ff.inner.Close()
	})
	if !ran {
		ff.inner.Close()
	}
	return err
}

// String describes the rule for test failure messages.
func (r *Rule) String() string {
	op := string(r.op)
	if op == "" {
		op = "any"
	}
	return fmt.Sprintf("fail %s %q with %v", op, r.pattern, r.err)
}
