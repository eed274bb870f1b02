package vfs

import (
	"path/filepath"
	"strings"
	"syscall"
)

// resolved is the result of looking a path up in a Mem.
type resolved struct {
	dir     *node  // directory holding the final entry; nil for the root
	base    string // name of the final entry in dir
	n       *node  // the final entry; nil if dir has no entry base
	path    string // canonical absolute path of the final entry, without symbolic links
	mustDir bool   // the name ended in a separator, so it must be a directory
}

// lookup returns the existing node name refers to. A trailing separator
// follows a final symbolic link, as the kernel does for stat and open.
func (m *Mem) lookup(name string, follow bool) (*node, error) {
	r, err := m.resolve(name, follow || strings.HasSuffix(name, "/"))
	switch {
	case err != nil:
		return nil, err
	case r.n == nil:
		return nil, syscall.ENOENT
	case r.mustDir && !r.n.isDir():
		return nil, syscall.ENOTDIR
	}
	return r.n, nil
}

// resolve walks name from the root, expanding symbolic links in every
// component but the last, and in the last too if follow is set. A missing
// final component is not an error: the result has n == nil so callers can
// create it. A missing or non-directory intermediate component is ENOENT or
// ENOTDIR, as with the OS. Operations that create or remove an entry call it
// with follow false even for a name with a trailing separator, so that
// Mkdir("l/") on an existing link l is EEXIST and Remove("l/") is ENOTDIR.
func (m *Mem) resolve(name string, follow bool) (resolved, error) {
	if name == "" {
		return resolved{}, syscall.ENOENT
	}
	mustDir := strings.HasSuffix(name, "/") && strings.Trim(name, "/") != ""
	w := walker{stack: []*node{m.root}, names: []string{}}
	if err := w.walk(splitPath(name), follow); err != nil {
		return resolved{}, err
	}
	r := w.result()
	r.mustDir = mustDir
	return r, nil
}

// splitPath returns the components of name, which is relative to the root
// whether or not it starts with a separator.
func splitPath(name string) []string {
	name = filepath.ToSlash(filepath.Clean("/" + name))
	if name == "/" {
		return nil
	}
	return strings.Split(name[1:], "/")
}

// walker holds the directories from the root to the current position, so
// ".." in a symbolic link target goes to the real parent.
type walker struct {
	stack   []*node  // stack[0] is the root; the last element is the current node
	names   []string // names[i] is the entry name of stack[i+1]
	missing string   // the final component, when it does not exist
	links   int
}

func (w *walker) cur() *node { return w.stack[len(w.stack)-1] }

func (w *walker) walk(comps []string, follow bool) error {
	for i, c := range comps {
		last := i == len(comps)-1
		if err := w.step(c, last, follow); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) step(c string, last, follow bool) error {
	switch c {
	case "", ".":
		return nil
	case "..":
		if len(w.stack) > 1 {
			w.stack = w.stack[:len(w.stack)-1]
			w.names = w.names[:len(w.names)-1]
		}
		return nil
	}
	d := w.cur()
	if !d.isDir() {
		return syscall.ENOTDIR
	}
	child := d.ents[c]
	switch {
	case child == nil && last:
		w.missing = c
		return nil
	case child == nil:
		return syscall.ENOENT
	case child.isSymlink() && (!last || follow):
		return w.expand(child.target, last, follow)
	}
	w.stack = append(w.stack, child)
	w.names = append(w.names, c)
	return nil
}

// expand continues the walk through the target of a symbolic link found in
// the current directory.
func (w *walker) expand(target string, last, follow bool) error {
	if w.links++; w.links > maxSymlinks {
		return syscall.ELOOP
	}
	if target == "" {
		return syscall.ENOENT
	}
	if strings.HasPrefix(target, "/") {
		w.stack, w.names = w.stack[:1], w.names[:0]
	}
	comps := strings.Split(filepath.ToSlash(target), "/")
	for i, c := range comps {
		// Only the link's own last component inherits the caller's follow
		// decision; everything before it is an intermediate directory.
		if err := w.step(c, last && i == len(comps)-1, follow || !last); err != nil {
			return err
		}
		if w.missing != "" && i < len(comps)-1 {
			return syscall.ENOENT
		}
	}
	return nil
}

// result turns the walker's final position into a resolved.
func (w *walker) result() resolved {
	if w.missing != "" {
		return resolved{dir: w.cur(), base: w.missing, path: w.pathOf(w.names, w.missing)}
	}
	if len(w.stack) == 1 {
		return resolved{n: w.stack[0], base: "/", path: "/"}
	}
	k := len(w.stack)
	base := w.names[len(w.names)-1]
	return resolved{dir: w.stack[k-2], base: base, n: w.stack[k-1], path: w.pathOf(w.names[:len(w.names)-1], base)}
}

func (w *walker) pathOf(dirs []string, base string) string {
	return "/" + strings.Join(append(append([]string{}, dirs...), base), "/")
}
