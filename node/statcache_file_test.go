package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/node/store"
)

// statCacheAgent creates an agent from a workspace of n files on a node in
// dir, stops it (its last commit recorded the workspace) and closes the
// node, which saves the stat cache. It returns the agent ID and the
// workspace's path on that node.
func statCacheAgent(t *testing.T, dir string, n int) (string, string) {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(ws, "d", fmt.Sprintf("f%03d", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nd := newNode(t, dir, nodeOpts{})
	id := createAgent(t, nd, ws)
	if _, err := nd.StopAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := nd.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return id, filepath.Join(dir, "agents", id, workDir)
}

// recordAfterRestart starts a node on dir, stops the agent, and records
// its workspace, returning the snapshot and how many files the stat cache
// vouched for.
func recordAfterRestart(t *testing.T, dir, id string) (*capsule.Snapshot, int) {
	t.Helper()
	nd := newNode(t, dir, nodeOpts{})
	openNodes = append(openNodes, nd)
	t.Cleanup(func() { closeNodes(t) })
	if _, err := nd.StopAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	a, err := nd.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	hits := a.cache.HitCount()
	rec, err := a.record()
	if err != nil {
		t.Fatal(err)
	}
	return rec.Snap, a.cache.HitCount() - hits
}

// TestStatCacheSurvivesRestart checks that the stat cache a stopping node
// saves lets the first record after the restart hash nothing it hashed
// before, and that what it records is the workspace.
func TestStatCacheSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	id, work := statCacheAgent(t, dir, 40)
	// The files were hashed as soon as they were written: racily clean,
	// the cache does not vouch for them. A record once they are older
	// than store.RacyWindow hashes them again, and a stopping node saves that.
	time.Sleep(store.RacyWindow + 50*time.Millisecond)
	recordAfterRestart(t, dir, id)
	closeNodes(t)
	snap, hits := recordAfterRestart(t, dir, id)
	if hits < 40 {
		t.Errorf("after a restart the stat cache vouched for %d files, want at least the 40 untouched ones", hits)
	}
	checkRecorded(t, snap, work)
}

// TestStatCacheDistrustsFilesChangedWhileDown rewrites a file while the
// node is down, keeping its size and modification time: its change time
// (and, for a replaced file, its inode) gives it away, and it is hashed
// again.
func TestStatCacheDistrustsFilesChangedWhileDown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	id, work := statCacheAgent(t, dir, 10)
	time.Sleep(store.RacyWindow + 50*time.Millisecond)
	for _, name := range []string{"f003", "f007"} {
		p := filepath.Join(work, "d", name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		b[0] ^= 0xff        // same size
		if name == "f007" { // replaced: a new inode
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	snap, _ := recordAfterRestart(t, dir, id)
	checkRecorded(t, snap, work)
}

// TestStatCacheFileIgnoredWhenBad starts a node over a torn, foreign or
// malformed saved cache: it is ignored, and the workspace is hashed.
func TestStatCacheFileIgnoredWhenBad(t *testing.T) {
	for _, c := range []struct {
		name string
		data func(work string) string
	}{
		{"torn", func(string) string { return `{"v":1,"dir":` }},
		{"other workspace", func(string) string { return `{"v":1,"dir":"/elsewhere","files":[]}` }},
		{"newer version", func(w string) string { return fmt.Sprintf(`{"v":99,"dir":%q,"files":[]}`, w) }},
		{"bad path", func(w string) string {
			return fmt.Sprintf(`{"v":1,"dir":%q,"files":[{"p":"../x","s":1,"b":"sha256:%064x"}]}`, w, 0)
		}},
		{"bad digest", func(w string) string {
			return fmt.Sprintf(`{"v":1,"dir":%q,"files":[{"p":"d/f001","s":1,"b":"md5:00"}]}`, w)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "n")
			id, work := statCacheAgent(t, dir, 5)
			if err := os.WriteFile(filepath.Join(dir, "agents", id, statCacheFile), []byte(c.data(work)), 0o600); err != nil {
				t.Fatal(err)
			}
			snap, hits := recordAfterRestart(t, dir, id)
			if hits != 0 {
				t.Errorf("a %s stat cache vouched for %d files, want none", c.name, hits)
			}
			checkRecorded(t, snap, work)
		})
	}
}

// openNodes are the nodes recordAfterRestart started, closed by
// closeNodes (which saves their stat caches).
var openNodes []*Node

func closeNodes(t *testing.T) {
	for _, nd := range openNodes {
		if err := nd.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
	openNodes = nil
}

// checkRecorded checks that every file entry of snap holds the digest of
// the workspace file's bytes now.
func checkRecorded(t *testing.T, snap *capsule.Snapshot, work string) {
	t.Helper()
	n := 0
	for _, e := range snap.Entries {
		if e.Type != capsule.TypeFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(e.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if got := digest.FromBytes(b); got != e.Blob {
			t.Errorf("%s recorded as %s, holds %s", e.Path, e.Blob.Short(), got.Short())
		}
		n++
	}
	if n == 0 {
		t.Fatal("the record holds no file")
	}
}
