package dirlist

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
)

// TestEachListsEveryEntryOnce lists a folder of more entries than one batch
// on the real file system and on vfs.Mem, and stops at fn's error.
func TestEachListsEveryEntryOnce(t *testing.T) {
	const n = 2*batch + 7
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("f%05d", i))
	}
	dir := t.TempDir()
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFile(mem, "/d/"+name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		fsys vfs.FS
		dir  string
	}{{vfs.OS{}, dir}, {mem, "/d"}} {
		var got []string
		if err := Each(c.fsys, c.dir, func(e fs.DirEntry) error { got = append(got, e.Name()); return nil }); err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T: names (-want +got):\n%s", c.fsys, diff)
		}
		stop := errors.New("stop")
		calls := 0
		if err := Each(c.fsys, c.dir, func(fs.DirEntry) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
			t.Errorf("%T: stopping: err %v after %d calls, want stop after 1", c.fsys, err, calls)
		}
	}
	if err := Each(vfs.OS{}, filepath.Join(dir, "absent"), func(fs.DirEntry) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent folder: %v, want ErrNotExist", err)
	}
}
