package vfstest

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// Snapshot returns what lies below root, for comparing whole trees with
// cmp.Diff. Keys are slash-separated paths relative to root. A regular file
// maps to its contents, a directory to "" under its path with a trailing
// "/", and a symbolic link to "-> " and its target. Root itself is not
// listed; a missing root gives an empty map.
func Snapshot(t testing.TB, fsys vfs.FS, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if _, err := fsys.Lstat(root); err != nil {
		return out
	}
	snapshotDir(t, fsys, root, "", out)
	return out
}

func snapshotDir(t testing.TB, fsys vfs.FS, dir, rel string, out map[string]string) {
	t.Helper()
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	for _, e := range ents {
		name, key := filepath.Join(dir, e.Name()), path.Join(rel, e.Name())
		switch e.Type() {
		case fs.ModeDir:
			out[key+"/"] = ""
			snapshotDir(t, fsys, name, key, out)
		case fs.ModeSymlink:
			target, err := fsys.Readlink(name)
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			out[key] = "-> " + target
		default:
			data, err := vfs.ReadFile(fsys, name)
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			out[key] = string(data)
		}
	}
}

// DropTemp returns snap without the leftovers of interrupted atomic writes:
// entries whose name starts with vfs.TempPrefix.
func DropTemp(snap map[string]string) map[string]string {
	out := make(map[string]string, len(snap))
	for k, v := range snap {
		if !strings.HasPrefix(path.Base(k), vfs.TempPrefix) {
			out[k] = v
		}
	}
	return out
}
