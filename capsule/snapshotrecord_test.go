package capsule

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

// orderTree has names whose order as paths differs from their order as
// directory entries ("a.txt" < "a/b"), empty directories, one emptied by
// dropping its only link, and a kept link.
func orderTree(t *testing.T, fsys vfs.FS) {
	t.Helper()
	writeWorkspace(t, fsys, map[string]string{
		"a/b": "1", "a.txt": "2", "a-b/c": "3", "a!": "4", "e.txt": "5", "x.y": "6", "run": "#!/bin/sh\n",
	})
	for _, d := range []string{"/ws/e", "/ws/x/y", "/ws/f", "/ws/g"} {
		if err := fsys.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := fsys.Symlink("../../outside", "/ws/f/escapes"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Symlink("../a.txt", "/ws/g/ok"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Chmod("/ws/run", 0o755); err != nil {
		t.Fatal(err)
	}
}

// FORMAT §5.1, §5.3: the snapshot streamed to snapshot.json is sorted by
// path and byte for byte what Snapshot.Marshal writes, and holds what
// BuildSnapshot returns.
func TestSnapshotStreamsInPathOrder(t *testing.T) {
	mem := vfs.NewMem()
	c, err := Init(mem, "/cap", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	orderTree(t, mem)
	res, err := c.SnapshotFrom("/ws", SnapshotConfig{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := vfs.ReadFile(mem, "/cap/"+manifest.SnapshotPath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSnapshot(got)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("snapshot.json differs from Marshal:\n%s\nwant:\n%s", got, want)
	}
	var paths []string
	for _, e := range s.Entries {
		paths = append(paths, e.Path+":"+string(e.Type))
	}
	wantPaths := []string{"a!:file", "a-b/c:file", "a.txt:file", "a/b:file", "e:dir", "e.txt:file",
		"f:dir", "g/ok:symlink", "run:file", "x.y:file", "x/y:dir"}
	if diff := cmp.Diff(wantPaths, paths); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if res.SnapshotStats != s.Stats() {
		t.Errorf("result counts %+v, snapshot %+v", res.SnapshotStats, s.Stats())
	}
	built, _, err := BuildSnapshot("/ws", c.Blobs(), SnapshotConfig{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Entries, built.Entries); diff != "" {
		t.Errorf("BuildSnapshot differs from the committed snapshot (-committed +built):\n%s", diff)
	}
	if ents, _ := mem.ReadDir("/cap/artifacts"); len(ents) != 2 { // blobs/ and snapshot.json
		t.Errorf("artifacts holds %d entries, want 2 (no temporary file left)", len(ents))
	}
}

// A directory the first pass saw empty that holds a file by the second
// fails the snapshot instead of recording both.
func TestSnapshotTreeChangedBetweenPasses(t *testing.T) {
	mem := vfs.NewMem()
	c, err := Init(mem, "/cap", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	orderTree(t, mem)
	faulty := vfs.NewFaulty(mem)
	reads := 0
	faulty.OnOp(func(r vfs.OpRecord) error {
		if r.Op == vfs.OpReadDir && filepath.Clean(r.Path) == "/ws/e" {
			if reads++; reads == 2 {
				return vfs.WriteFile(mem, "/ws/e/new", []byte("new"), 0o644)
			}
		}
		return nil
	})
	c, err = Open(faulty, "/cap", Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SnapshotFrom("/ws", SnapshotConfig{})
	if err == nil || !strings.Contains(err.Error(), "changed while it was being recorded") {
		t.Fatalf("SnapshotFrom = %v, want a changed tree", err)
	}
	if s, err := c.Snapshot(); err != nil || len(s.Entries) != 0 {
		t.Errorf("the failed snapshot was committed: %v %v", s, err)
	}
}
