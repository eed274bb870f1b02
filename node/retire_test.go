package node

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node/store"
)

// statOf returns what a rewrite of a file would change: inode, ctime and
// modification time.
func statOf(t *testing.T, path string) [3]int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino, ctime := store.InodeOf(fi)
	return [3]int64{int64(ino), ctime, fi.ModTime().UnixNano()}
}

// A retired workspace stays as the shadow of a move back: the move back
// rewrites only what changed (an unchanged file keeps its inode and
// times), and the shadow holds what a checkout holds (an ignored folder
// left in the workspace is gone).
func TestRetiredWorkspaceIsShadowOfMoveBack(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	ws := t.TempDir()
	big := make([]byte, 256<<10)
	rng := rand.New(rand.NewPCG(1, 2)) // fixed content; nothing random is checked
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	files := map[string][]byte{
		".capsuleignore":  []byte("scratch/\n"),
		"big.bin":         big,
		"src/main.go":     []byte("package main\n"),
		"scratch/tmp.txt": []byte("ignored\n"),
	}
	for name, data := range files {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := createAgent(t, a, ws)
	ag, err := a.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	bigPath := filepath.Join(ag.work(), "big.bin")
	before := statOf(t, bigPath)

	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move A -> B: %+v", res)
	}
	if _, err := os.Stat(ag.path(shadowFile)); err != nil {
		t.Fatalf("A kept no shadow after retiring: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ag.path(shadowDir, workDir), "scratch")); !os.IsNotExist(err) {
		t.Errorf("the shadow kept the ignored folder scratch/ (stat: %v)", err)
	}
	waitSteps(t, b, id, 3)

	taken := a.shadowsTaken.Load()
	if res := move(t, b, a, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move B -> A: %+v", res)
	}
	waitSteps(t, a, id, 3)
	c.checkHolder(a, id)
	if got := a.shadowsTaken.Load(); got != taken+1 {
		t.Errorf("moves staged from a shadow on A: got %d, want %d", got, taken+1)
	}
	if got := statOf(t, bigPath); got != before {
		t.Errorf("big.bin was rewritten by the move back: inode, ctime, mtime %v, want %v", got, before)
	}
	got, err := os.ReadFile(bigPath)
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("big.bin after the move back: %d bytes, err %v; want the %d bytes written", len(got), err, len(big))
	}
	if _, err := os.Stat(filepath.Join(ag.work(), "scratch")); !os.IsNotExist(err) {
		t.Errorf("the ignored folder scratch/ came back with the move (stat: %v)", err)
	}
}

// cachedNow reports whether the stat cache of ag vouches for the workspace
// file rel as it is now, without hashing anything.
func cachedNow(t *testing.T, ag *tenant, rel string) bool {
	t.Helper()
	fi, err := os.Stat(filepath.Join(ag.work(), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	_, ok := ag.cache.Lookup(rel, store.KeyOf(fi))
	return ok
}

// The new holder's stat cache learns the workspace it materialized: files
// written too recently to be trusted at once are hashed again in the
// background once store.RacyWindow has passed, so the next freeze hashes none
// of the unchanged files.
func TestNewHolderCacheVouchesForCheckout(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "big.bin"), bytes.Repeat([]byte("capsule "), 32<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	id := createAgent(t, a, ws)
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move A -> B: %+v", res)
	}
	waitSteps(t, b, id, 3)
	ag, err := b.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(store.RacyWindow + 3*time.Second)
	for {
		ag.mu.Lock()
		ok := cachedNow(t, ag, "big.bin")
		ag.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's stat cache does not vouch for big.bin %v after the move", store.RacyWindow+3*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
