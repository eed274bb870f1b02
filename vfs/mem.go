package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrCrashed is the error of every operation on a file handle that was open
// when (*Mem).Crash ran, and of every operation Faulty fails after a crash
// point of vfstest.ForEachCrashPoint.
var ErrCrashed = errors.New("vfs: crashed")

// maxSymlinks bounds symbolic link expansion in one path lookup, as Linux does.
const maxSymlinks = 40

// modeMask is what Chmod and file creation keep of a mode: the permission
// bits and setuid, setgid and sticky, like os.Chmod.
const modeMask = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// Mem is an in-memory FS that models durability no better than POSIX and
// ext4 promise, so tests can simulate a power loss with Crash or, for any
// chosen outcome of the unsynced changes, CrashKeeping.
//
// The model (the package doc says why it is this one):
//   - A regular file has current contents and durable contents; File.Sync
//     makes the current contents durable. A crash keeps, per file, the
//     durable contents, the current ones, or (after an append) the durable
//     contents and the first half of the appended bytes: a torn append.
//   - Each change of a directory entry (a file created by OpenFile with
//     O_CREATE, Mkdir, Symlink, Remove, each entry RemoveAll unlinks,
//     Rename) is pending until SyncDir of a directory it changes (or Sync of
//     that directory opened as a File) makes it durable, together with
//     every pending change it needs. A crash may keep or lose each pending
//     change on its own, except that keeping one keeps what it needs: the
//     earlier changes of the same name (a rename of a temporary file needs
//     its creation), and for a directory rename every earlier change (so no
//     crash can put a directory inside itself). A rename is one change: the
//     new name shows the moved node and the old name is gone, or neither
//     happened; syncing either directory of a cross-directory rename makes
//     both sides durable.
//   - Mode bits become durable with File.Sync of the file, with SyncDir of the
//     directory itself, or with SyncDir of a directory that holds an entry
//     for it (metadata travels with the journal commit).
//   - A crash reverts every directory reachable from the root through
//     durable entries to its durable entries (with the kept changes), every
//     such file to its durable contents, and invalidates all open handles
//     (their operations return ErrCrashed). A file or directory reachable
//     only through changes the crash lost vanishes with everything below it.
//
// Unsynced lists the pending changes with what each needs; CrashKeeping
// takes the indices to keep. Crash keeps none, the outcome in which the
// most is lost; vfstest.ForEachCrashPoint checks the others too.
//
// Paths may be absolute or relative; relative paths are relative to "/".
// Names are cleaned lexically first (filepath.Clean), so "x/../a" means "a"
// even where x does not exist; a trailing separator still demands a
// directory. Symbolic links are followed within Mem (an absolute target is relative to
// Mem's root). Errors are *fs.PathError or *os.LinkError values wrapping the
// syscall.Errno the OS would report (ENOENT, EEXIST, ENOTDIR, EISDIR,
// ENOTEMPTY, EINVAL, ELOOP, EBADF), so errors.Is(err, fs.ErrNotExist) and
// os.IsExist behave as with OS.
//
// Differences from OS: permissions are recorded but never enforced, no umask
// is applied, ModTime is always the zero time, and the size of a directory
// is 0. Mem is safe for concurrent use and fully deterministic.
type Mem struct {
	mu   sync.Mutex
	root *node
	gen  uint64   // incremented by Crash; handles of older generations are dead
	log  crashLog // entry changes not yet durable
}

var _ FS = (*Mem)(nil)

// node is an inode: a regular file, a directory or a symbolic link.
type node struct {
	mode    fs.FileMode // type and permission bits
	durMode fs.FileMode
	data    []byte // regular file: current contents
	durData []byte // regular file: contents as of the last Sync
	ents    map[string]*node
	durEnts map[string]*node
	target  string // symbolic link
}

// NewMem returns an empty Mem whose root directory is durable.
func NewMem() *Mem {
	return &Mem{root: newDir(0o755)}
}

func newDir(perm fs.FileMode) *node {
	mode := fs.ModeDir | perm&modeMask
	return &node{mode: mode, durMode: mode, ents: map[string]*node{}, durEnts: map[string]*node{}}
}

func newFile(perm fs.FileMode) *node {
	mode := perm & modeMask
	return &node{mode: mode, durMode: mode}
}

func (n *node) isDir() bool     { return n.mode.IsDir() }
func (n *node) isSymlink() bool { return n.mode&fs.ModeSymlink != 0 }
func (n *node) isRegular() bool { return n.mode.IsRegular() }

// info describes n under the given name.
func (n *node) info(name string) fs.FileInfo {
	size := int64(len(n.data))
	if n.isSymlink() {
		size = int64(len(n.target))
	}
	return &memInfo{name: name, size: size, mode: n.mode}
}

// memInfo is the fs.FileInfo of a Mem node.
type memInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i *memInfo) Name() string       { return i.name }
func (i *memInfo) Size() int64        { return i.size }
func (i *memInfo) Mode() fs.FileMode  { return i.mode }
func (i *memInfo) ModTime() time.Time { return time.Time{} }
func (i *memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *memInfo) Sys() any           { return nil }

// OpenFile implements FS.
func (m *Mem) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.open(name, flag, perm)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	return &memFile{
		m: m, n: n, name: name, gen: m.gen,
		read:   acc != os.O_WRONLY,
		write:  acc != os.O_RDONLY,
		append: flag&os.O_APPEND != 0,
	}, nil
}

// open finds or creates the node for OpenFile, checking in the order
// open(2) does: the parent path, O_CREAT with a trailing slash, O_EXCL,
// then the final symbolic link.
func (m *Mem) open(name string, flag int, perm fs.FileMode) (*node, error) {
	create := flag&os.O_CREATE != 0
	r, err := m.resolve(name, false)
	if err == nil && r.n != nil && r.n.isSymlink() && !(create && flag&os.O_EXCL != 0) && !(create && r.mustDir) {
		r, err = m.resolve(name, true)
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	switch {
	case err != nil:
		return nil, err
	case create && r.mustDir:
		return nil, syscall.EISDIR
	case r.n != nil && create && flag&os.O_EXCL != 0:
		return nil, syscall.EEXIST
	case r.n == nil && !create:
		return nil, syscall.ENOENT
	case r.n == nil:
		r.n = newFile(perm)
		r.dir.ents[r.base] = r.n
		m.record(ChangeCreate, r, r.n)
	case r.n.isDir() && (writable || flag&os.O_TRUNC != 0):
		return nil, syscall.EISDIR
	case r.mustDir && !r.n.isDir():
		return nil, syscall.ENOTDIR
	}
	if flag&os.O_TRUNC != 0 && writable {
		r.n.data = nil
	}
	return r.n, nil
}

// Open implements FS.
func (m *Mem) Open(name string) (File, error) {
	return m.OpenFile(name, os.O_RDONLY, 0)
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.remove(name); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

func (m *Mem) remove(name string) error {
	r, err := m.resolve(name, false)
	switch {
	case err != nil:
		return err
	case r.n == nil:
		return syscall.ENOENT
	case r.dir == nil:
		return syscall.EBUSY
	case r.n.isDir() && len(r.n.ents) > 0:
		return syscall.ENOTEMPTY
	case r.mustDir && !r.n.isDir():
		return syscall.ENOTDIR
	}
	delete(r.dir.ents, r.base)
	m.record(ChangeRemove, r, r.n)
	return nil
}

// RemoveAll implements FS. Like os.RemoveAll it unlinks every entry below
// name, so a later SyncDir of any of those directories makes the removal
// durable there too.
func (m *Mem) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == "" {
		return nil
	}
	if name == "." || strings.HasSuffix(name, string(filepath.Separator)+".") {
		return &fs.PathError{Op: "RemoveAll", Path: name, Err: syscall.EINVAL}
	}
	r, err := m.resolve(name, false)
	if errors.Is(err, syscall.ENOENT) || err == nil && r.n == nil {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	m.clearTree(r.n, r.path)
	if r.dir != nil { // RemoveAll("/") empties the root but keeps it
		delete(r.dir.ents, r.base)
		m.record(ChangeRemove, r, r.n)
	}
	return nil
}

// clearTree unlinks every current entry below n, whose path is path, the
// deepest first.
func (m *Mem) clearTree(n *node, path string) {
	if !n.isDir() {
		return
	}
	for _, name := range sortedNames(n.ents) {
		c, p := n.ents[name], strings.TrimSuffix(path, "/")+"/"+name
		m.clearTree(c, p)
		m.record(ChangeRemove, resolved{dir: n, base: name, path: p}, c)
	}
	n.ents = map[string]*node{}
}

// Rename implements FS. Like rename(2) it replaces a file with a file or a
// directory with an empty directory, and fails with EISDIR, ENOTDIR,
// ENOTEMPTY or EINVAL (a directory into itself) otherwise.
func (m *Mem) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.rename(oldname, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func (m *Mem) rename(oldname, newname string) error {
	// Like Linux: both parent lookups first, then the source entry.
	src, err := m.resolve(oldname, false)
	if err != nil {
		return err
	}
	dst, err := m.resolve(newname, false)
	if err != nil {
		return err
	}
	if src.n == nil {
		return syscall.ENOENT
	}
	if src.dir == nil || dst.dir == nil {
		return syscall.EBUSY
	}
	if err := checkRename(src, dst); err != nil || src.n == dst.n {
		return err
	}
	delete(src.dir.ents, src.base)
	dst.dir.ents[dst.base] = src.n
	m.recordRename(src, dst)
	return nil
}

// checkRename applies rename(2)'s rules for replacing dst with src, in the
// order Linux checks them.
func checkRename(src, dst resolved) error {
	switch {
	case (src.mustDir || dst.mustDir) && !src.n.isDir():
		return syscall.ENOTDIR
	case strings.HasPrefix(dst.path, src.path+"/"):
		return syscall.EINVAL // a directory into itself
	case strings.HasPrefix(src.path, dst.path+"/"):
		return syscall.ENOTEMPTY // over one of its own ancestors
	case dst.n == nil || dst.n == src.n:
		return nil
	case src.n.isDir() && !dst.n.isDir():
		return syscall.ENOTDIR
	case !src.n.isDir() && dst.n.isDir():
		return syscall.EISDIR
	case dst.n.isDir() && len(dst.n.ents) > 0:
		return syscall.ENOTEMPTY
	}
	return nil
}

// Mkdir implements FS.
func (m *Mem) Mkdir(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mkdir(name, perm); err != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	return nil
}

func (m *Mem) mkdir(name string, perm fs.FileMode) error {
	r, err := m.resolve(name, false)
	switch {
	case err != nil:
		return err
	case r.n != nil:
		return syscall.EEXIST
	}
	d := newDir(perm)
	r.dir.ents[r.base] = d
	m.record(ChangeMkdir, r, d)
	return nil
}

// MkdirAll implements FS.
func (m *Mem) MkdirAll(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mkdirAll(name, perm)
}

// mkdirAll follows os.MkdirAll step by step, so both fail alike.
func (m *Mem) mkdirAll(name string, perm fs.FileMode) error {
	if n, err := m.lookup(name, true); err == nil {
		if n.isDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.ENOTDIR}
	}
	if parent := parentOf(name); parent != "" {
		if err := m.mkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := m.mkdir(name, perm); err != nil {
		if n, err1 := m.lookup(name, false); err1 == nil && n.isDir() {
			return nil // "foo/." and the like
		}
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	return nil
}

// parentOf returns name without its last element and trailing separators,
// or "" for a single element, as os.MkdirAll computes it.
func parentOf(name string) string {
	i := len(name) - 1
	for i >= 0 && name[i] == filepath.Separator {
		i--
	}
	for i >= 0 && name[i] != filepath.Separator {
		i--
	}
	return name[:max(i, 0)]
}

// ReadDir implements FS.
func (m *Mem) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name, true)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if !n.isDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	out := make([]fs.DirEntry, 0, len(n.ents))
	for _, base := range sortedNames(n.ents) {
		out = append(out, fs.FileInfoToDirEntry(n.ents[base].info(base)))
	}
	return out, nil
}

func sortedNames(ents map[string]*node) []string {
	names := make([]string, 0, len(ents))
	for name := range ents {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Stat implements FS.
func (m *Mem) Stat(name string) (fs.FileInfo, error) {
	return m.stat("stat", name, true)
}

// Lstat implements FS.
func (m *Mem) Lstat(name string) (fs.FileInfo, error) {
	return m.stat("lstat", name, false)
}

func (m *Mem) stat(op, name string, follow bool) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name, follow)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return n.info(filepath.Base(name)), nil
}

// Symlink implements FS. The target is stored verbatim; a relative target is
// resolved against the directory holding the link.
func (m *Mem) Symlink(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.resolve(newname, false)
	switch {
	case err == nil && r.n != nil:
		err = syscall.EEXIST
	case err == nil && r.mustDir:
		err = syscall.ENOENT
	}
	if err != nil {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: err}
	}
	mode := fs.ModeSymlink | fs.ModePerm
	l := &node{mode: mode, durMode: mode, target: oldname}
	r.dir.ents[r.base] = l
	m.record(ChangeSymlink, r, l)
	return nil
}

// Readlink implements FS.
func (m *Mem) Readlink(name string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name, false)
	if err == nil && !n.isSymlink() {
		err = syscall.EINVAL
	}
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return n.target, nil
}

// Chmod implements FS. It follows symbolic links and keeps the permission,
// setuid, setgid and sticky bits of mode.
func (m *Mem) Chmod(name string, mode fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name, true)
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: name, Err: err}
	}
	n.mode = n.mode&fs.ModeType | mode&modeMask
	return nil
}

// SyncDir implements FS: it makes the current entries of directory name
// durable, together with the mode bits of the directory and its children.
func (m *Mem) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name, true)
	if err == nil && !n.isDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return &fs.PathError{Op: "syncdir", Path: name, Err: err}
	}
	m.syncDir(n)
	return nil
}

// syncDir makes directory n durable: its pending entry changes (and what
// they need) and its mode bits and those of its children. The caller holds
// m.mu.
func (m *Mem) syncDir(n *node) {
	m.log.syncDir(n)
	n.syncDir()
}

func (n *node) syncDir() {
	n.durEnts = make(map[string]*node, len(n.ents))
	for name, c := range n.ents {
		n.durEnts[name] = c
		c.durMode = c.mode
	}
	n.durMode = n.mode
}

func (n *node) syncData() {
	n.durData = bytes.Clone(n.data)
	n.durMode = n.mode
}

func crashTree(d *node, visited map[*node]bool) {
	visited[d] = true
	d.mode = d.durMode
	d.ents = make(map[string]*node, len(d.durEnts))
	for _, name := range sortedNames(d.durEnts) {
		c := d.durEnts[name]
		if visited[c] && c.isDir() {
			delete(d.durEnts, name) // would make a directory its own ancestor
			continue
		}
		d.ents[name] = c
		if c.isDir() {
			crashTree(c, visited)
			continue
		}
		c.mode = c.durMode
		c.data = bytes.Clone(c.durData)
	}
}

// SyncAll makes the whole current state durable, as if every file and
// directory had been synced. Tests call it after building a starting state.
func (m *Mem) SyncAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log.persist(m.log.pending())
	m.log = crashLog{}
	syncTree(m.root)
}

func syncTree(d *node) {
	d.syncDir()
	for _, c := range d.ents {
		if c.isDir() {
			syncTree(c)
		} else if c.isRegular() {
			c.syncData()
		}
	}
}

// Clone returns a deep copy of m, current and durable state alike. Open
// handles are not copied: they keep referring to m.
func (m *Mem) Clone() *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*node]*node{}
	c := &Mem{root: cloneNode(m.root, seen)}
	c.log = m.log.clone(seen)
	return c
}

func cloneNode(n *node, seen map[*node]*node) *node {
	if c, ok := seen[n]; ok {
		return c
	}
	c := &node{mode: n.mode, durMode: n.durMode, target: n.target,
		data: bytes.Clone(n.data), durData: bytes.Clone(n.durData)}
	seen[n] = c
	if n.isDir() {
		c.ents = cloneEnts(n.ents, seen)
		c.durEnts = cloneEnts(n.durEnts, seen)
	}
	return c
}

func cloneEnts(ents map[string]*node, seen map[*node]*node) map[string]*node {
	out := make(map[string]*node, len(ents))
	for name, n := range ents {
		out[name] = cloneNode(n, seen)
	}
	return out
}

// Durable returns a copy of the state that would survive a crash now: a
// Clone of m that has crashed. m itself is unchanged.
func (m *Mem) Durable() *Mem {
	c := m.Clone()
	c.Crash()
	return c
}
