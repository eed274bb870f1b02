package vfs

import (
	"bytes"
	"fmt"
	"sort"
)

// ChangeKind names a kind of change a crash of a Mem may keep or lose.
type ChangeKind string

// The kinds of unsynced change a Mem tracks.
const (
	ChangeCreate  ChangeKind = "create"  // OpenFile with O_CREATE made a new file
	ChangeMkdir   ChangeKind = "mkdir"   // Mkdir, MkdirAll
	ChangeSymlink ChangeKind = "symlink" // Symlink
	ChangeRemove  ChangeKind = "remove"  // Remove, and each entry RemoveAll unlinks
	ChangeRename  ChangeKind = "rename"  // Rename
	ChangeWrite   ChangeKind = "write"   // a file's contents differ from its synced contents
	// ChangeTorn keeps the first half of what was appended to a file since
	// its last sync: the write that keeps it all needs it.
	ChangeTorn ChangeKind = "torn write"
)

// Change is one change of a Mem that is not durable yet: a crash may keep
// it or lose it (see Mem).
type Change struct {
	Kind    ChangeKind
	Path    string // the entry changed (for a write, a name of the file)
	NewPath string // a rename's new name
	// Needs lists the indices, in the same list, of the earlier changes
	// that a crash keeps whenever it keeps this one.
	Needs []int
}

// String renders c as "kind path[ -> newpath]".
func (c Change) String() string {
	s := string(c.Kind) + " " + c.Path
	if c.NewPath != "" {
		s += " -> " + c.NewPath
	}
	return s
}

// entryOp is a change of directory entries not yet made durable.
type entryOp struct {
	seq     uint64
	kind    ChangeKind
	dir     *node // directory of name
	name    string
	n       *node // the node linked, unlinked or moved
	newDir  *node // a rename's target directory
	newName string
	path    string // canonical path of name, for Change
	newPath string
	deps    []*entryOp // earlier ops that survive whenever this one does
	barrier bool       // a directory rename: needs every earlier op
	done    bool       // durable, or void because no crash can reach its directory
}

// slot is one name in one directory.
type slot struct {
	dir  *node
	name string
}

func (op *entryOp) slots() []slot {
	s := []slot{{op.dir, op.name}}
	if op.kind == ChangeRename {
		s = append(s, slot{op.newDir, op.newName})
	}
	return s
}

func (op *entryOp) dirs() []*node {
	if op.kind == ChangeRename && op.newDir != op.dir {
		return []*node{op.dir, op.newDir}
	}
	return []*node{op.dir}
}

// crashLog holds a Mem's pending entry changes and what they depend on.
type crashLog struct {
	seq   uint64
	ops   []*entryOp           // in order; done ones are dropped lazily
	last  map[slot]*entryOp    // newest pending op on each slot
	byDir map[*node][]*entryOp // pending ops that change each directory
	dead  map[*node]bool       // directories durably unlinked
	done  int                  // ops in ops that are done
}

func (l *crashLog) init() {
	if l.last == nil {
		l.last = map[slot]*entryOp{}
		l.byDir, l.dead = map[*node][]*entryOp{}, map[*node]bool{}
	}
}

// add records op with its dependencies: the previous pending op on each
// name it changes. A directory rename depends on everything before it, so
// that no crash can leave a directory inside itself. An op inside a new
// directory does not depend on the directory's creation: if that is lost,
// the op is unreachable anyway.
func (l *crashLog) add(op *entryOp) {
	l.init()
	l.seq++
	op.seq = l.seq
	for _, s := range op.slots() {
		if p := l.last[s]; p != nil && !p.done {
			op.deps = append(op.deps, p)
		}
		l.last[s] = op
	}
	for _, d := range op.dirs() {
		l.byDir[d] = append(l.byDir[d], op)
	}
	op.barrier = op.kind == ChangeRename && op.n.isDir()
	l.ops = append(l.ops, op)
}

// pending returns the ops not yet durable, oldest first.
func (l *crashLog) pending() []*entryOp {
	out := l.ops[:0]
	for _, op := range l.ops {
		if !op.done {
			out = append(out, op)
		}
	}
	clear(l.ops[len(out):])
	l.ops, l.done = out, 0
	return out
}

// closure returns seeds with everything they depend on, oldest first.
func (l *crashLog) closure(seeds []*entryOp) []*entryOp {
	in := map[*entryOp]bool{}
	var visit func(op *entryOp)
	visit = func(op *entryOp) {
		if op.done || in[op] {
			return
		}
		in[op] = true
		for _, d := range op.deps {
			visit(d)
		}
		if op.barrier {
			for _, p := range l.ops {
				if p.seq < op.seq {
					visit(p)
				}
			}
		}
	}
	for _, op := range seeds {
		visit(op)
	}
	out := make([]*entryOp, 0, len(in))
	for op := range in {
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// persist applies ops, oldest first, to the durable entries.
func (l *crashLog) persist(ops []*entryOp) {
	for _, op := range ops {
		l.apply(op)
	}
}

func (l *crashLog) apply(op *entryOp) {
	switch op.kind {
	case ChangeRemove:
		delete(op.dir.durEnts, op.name)
	case ChangeRename:
		delete(op.dir.durEnts, op.name)
		op.newDir.durEnts[op.newName] = op.n
	default:
		op.dir.durEnts[op.name] = op.n
	}
	l.finish(op)
	if op.kind == ChangeRemove && op.n.isDir() {
		l.kill(op.n)
	}
}

// finish marks op durable and forgets it in the indexes.
func (l *crashLog) finish(op *entryOp) {
	op.done = true
	l.done++
	for _, s := range op.slots() {
		if l.last[s] == op {
			delete(l.last, s)
		}
	}
}

// kill voids the pending ops of a directory that was durably unlinked:
// no crash can reach it again (an unlinked node cannot be linked back),
// so only ops that also change a live directory still matter.
func (l *crashLog) kill(d *node) {
	l.dead[d] = true
	for _, op := range l.byDir[d] {
		if op.done || !l.allDead(op.dirs()) {
			continue
		}
		l.finish(op)
		if op.kind == ChangeRemove && op.n.isDir() {
			l.kill(op.n)
		}
	}
	delete(l.byDir, d)
}

func (l *crashLog) allDead(dirs []*node) bool {
	for _, d := range dirs {
		if !l.dead[d] {
			return false
		}
	}
	return true
}

// syncDir makes every pending change of directory d durable, with what
// those changes depend on.
func (l *crashLog) syncDir(d *node) {
	ops := l.byDir[d]
	delete(l.byDir, d)
	l.persist(l.closure(ops))
	if l.done > 1024 && l.done > len(l.ops)/2 {
		l.pending() // drop the done ops
	}
}

// record adds a pending entry change to m's log. The caller holds m.mu.
func (m *Mem) record(kind ChangeKind, r resolved, n *node) {
	m.log.add(&entryOp{kind: kind, dir: r.dir, name: r.base, n: n, path: r.path})
}

// recordRename adds a pending rename to m's log. The caller holds m.mu.
func (m *Mem) recordRename(src, dst resolved) {
	m.log.add(&entryOp{kind: ChangeRename, dir: src.dir, name: src.base, n: src.n,
		newDir: dst.dir, newName: dst.base, path: src.path, newPath: dst.path})
}

// Unsynced lists the changes a crash now may keep or lose: the pending
// entry changes, oldest first, then each file whose contents differ from
// its synced contents, by name. CrashKeeping takes indices into this list.
func (m *Mem) Unsynced() []Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unsyncedLocked()
}

func (m *Mem) unsyncedLocked() []Change {
	ops := m.log.pending()
	index := make(map[*entryOp]int, len(ops))
	out := make([]Change, 0, len(ops))
	for i, op := range ops {
		index[op] = i
		out = append(out, Change{Kind: op.kind, Path: op.path, NewPath: op.newPath, Needs: m.needs(op, index)})
	}
	for _, f := range m.dirtyFiles(ops) {
		w := Change{Kind: ChangeWrite, Path: f.path}
		if f.torn() {
			out = append(out, Change{Kind: ChangeTorn, Path: f.path})
			w.Needs = []int{len(out) - 1}
		}
		out = append(out, w)
	}
	return out
}

// needs returns the indices of the ops op depends on directly.
func (m *Mem) needs(op *entryOp, index map[*entryOp]int) []int {
	var out []int
	for _, p := range m.log.closure([]*entryOp{op}) {
		if p != op {
			out = append(out, index[p])
		}
	}
	return out
}

// dirtyFile is a regular file with unsynced contents.
type dirtyFile struct {
	n    *node
	path string
}

// torn reports whether the file was appended to since its last sync, so
// that a crash may keep part of the new bytes.
func (f dirtyFile) torn() bool {
	return len(f.n.data) > len(f.n.durData)+1 && bytes.HasPrefix(f.n.data, f.n.durData)
}

// dirtyFiles finds the files with unsynced contents that a crash could
// reach: through current or durable entries, or through pending ops.
func (m *Mem) dirtyFiles(ops []*entryOp) []dirtyFile {
	seen := map[*node]bool{}
	var out []dirtyFile
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.isRegular() && !bytes.Equal(n.data, n.durData) {
			out = append(out, dirtyFile{n, path})
		}
		if !n.isDir() {
			return
		}
		for _, ents := range []map[string]*node{n.ents, n.durEnts} {
			for _, name := range sortedNames(ents) {
				walk(ents[name], path+"/"+name)
			}
		}
	}
	walk(m.root, "")
	for _, op := range ops {
		walk(op.n, op.path)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// Crash simulates a power loss that loses every unsynced change: every
// directory reverts to its durable entries and every file to its durable
// contents and mode; what was reachable only through unsynced entries is
// gone. Every File opened before Crash returns ErrCrashed from then on.
// CrashKeeping chooses other outcomes.
func (m *Mem) Crash() { m.CrashKeeping(func(int) bool { return false }) }

// CrashKeeping simulates a power loss after which the changes keep picks
// survive, with every change they need: keep(i) is asked for each index
// of the list Unsynced returns now. Everything else is lost, as by Crash.
func (m *Mem) CrashKeeping(keep func(i int) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashKeepingLocked(keep)
}

// CrashChoosing is Unsynced and CrashKeeping under one lock: choose gets
// the unsynced changes as they are at the moment of the crash and returns
// which survive. Use it when something may still write to m: between a
// call of Unsynced and one of CrashKeeping a new change would shift the
// indices keep is asked about.
func (m *Mem) CrashChoosing(choose func(changes []Change) (keep func(i int) bool)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashKeepingLocked(choose(m.unsyncedLocked()))
}

func (m *Mem) crashKeepingLocked(keep func(i int) bool) {
	ops := m.log.pending()
	files := m.dirtyFiles(ops)
	var kept []*entryOp
	for i, op := range ops {
		if keep(i) {
			kept = append(kept, op)
		}
	}
	i := len(ops)
	for _, f := range files {
		if f.torn() {
			if keep(i) {
				half := len(f.n.durData) + (len(f.n.data)-len(f.n.durData))/2
				f.n.durData = bytes.Clone(f.n.data[:half])
			}
			i++
		}
		if keep(i) {
			f.n.durData = bytes.Clone(f.n.data)
		}
		i++
	}
	m.log.persist(m.log.closure(kept))
	m.log = crashLog{}
	m.gen++
	crashTree(m.root, map[*node]bool{})
}

// clone copies l for a Mem whose nodes seen maps from l's.
func (l *crashLog) clone(seen map[*node]*node) crashLog {
	c := crashLog{seq: l.seq}
	c.init()
	ops := map[*entryOp]*entryOp{}
	for _, op := range l.pending() {
		n := *op
		n.dir, n.n = cloneNode(op.dir, seen), cloneNode(op.n, seen)
		if op.newDir != nil {
			n.newDir = cloneNode(op.newDir, seen)
		}
		ops[op] = &n
		c.ops = append(c.ops, &n)
	}
	for _, op := range c.ops {
		deps := make([]*entryOp, 0, len(op.deps))
		for _, d := range op.deps {
			if nd := ops[d]; nd != nil {
				deps = append(deps, nd)
			}
		}
		op.deps = deps
		for _, s := range op.slots() {
			c.last[s] = op
		}
		for _, d := range op.dirs() {
			c.byDir[d] = append(c.byDir[d], op)
		}
	}
	for d := range l.dead {
		if cd, ok := seen[d]; ok {
			c.dead[cd] = true
		}
	}
	return c
}

// checkLog reports an inconsistency between the current entries of d and
// its durable entries with its pending changes applied; tests call it.
func (m *Mem) checkLog(name string) error {
	c := m.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.lookup(name, true)
	if err != nil {
		return err
	}
	c.log.persist(c.log.closure(c.log.byDir[d]))
	for _, n := range sortedNames(d.ents) {
		if d.durEnts[n] != d.ents[n] {
			return fmt.Errorf("%s: entry %s: durable state with pending changes differs from the current one", name, n)
		}
	}
	if len(d.durEnts) != len(d.ents) {
		return fmt.Errorf("%s: %d durable entries with pending changes, %d current", name, len(d.durEnts), len(d.ents))
	}
	return nil
}
