package memory

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/fixtures"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

var osfs = vfs.OS{}

// newDir makes a capsule folder holding events (as an uncommitted tail)
// and working memory wm.
func newDir(t *testing.T, events []journal.Event, wm string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	c, err := capsule.Init(osfs, dir, capsule.InitConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetWorkingMemory([]byte(wm)) }); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, dir, events)
	return dir
}

func appendEvents(t *testing.T, dir string, events []journal.Event) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(manifest.JournalPath)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b []byte
	for i := range events {
		b = append(journal.AppendEncode(b, &events[i]), '\n')
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func indexBytes(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(manifest.IndexPath)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func verify(t *testing.T, dir string) {
	t.Helper()
	rep, err := capsule.Verify(osfs, dir, capsule.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("the capsule does not verify: %v", err)
	}
}

// The index is committed through the manifest (FORMAT §3.1), rebuilt
// only as far as needed, and Check proves it equals a clean build.
func TestRebuildDir(t *testing.T) {
	c := newChat(t, "m1")
	c.steps(0, 10)
	dir := newDir(t, c.events, "the billing job runs at noon")
	rep, wrote, err := Rebuild(ctx, osfs, dir, capsule.Config{}, Hash{})
	if err != nil || !wrote || rep.Mode != ModeFull || !strings.Contains(rep.Reason, "stale") {
		t.Fatalf("first rebuild: %+v, wrote %v, %v", rep, wrote, err)
	}
	verify(t, dir)
	if r, err := Check(ctx, osfs, dir, Hash{}); err != nil || !r.Equal {
		t.Fatalf("check after a rebuild: %+v, %v", r, err)
	}
	rep, wrote, err = Rebuild(ctx, osfs, dir, capsule.Config{}, Hash{})
	if err != nil || wrote || rep.Mode != ModeUnchanged {
		t.Fatalf("second rebuild must change nothing: %+v, wrote %v, %v", rep, wrote, err)
	}
	n := len(c.events)
	c.steps(10, 1)
	appendEvents(t, dir, c.events[n:])
	if r, _ := Check(ctx, osfs, dir, Hash{}); r.Equal || !strings.Contains(r.Problem, "stale") {
		t.Fatalf("check of a stale index: %+v", r)
	}
	rep, _, err = Rebuild(ctx, osfs, dir, capsule.Config{}, Hash{})
	if err != nil || rep.Mode != ModeIncremental || rep.Embedded != 3 {
		t.Fatalf("rebuild after a step: %+v, %v", rep, err)
	}
	if r, _ := Check(ctx, osfs, dir, Hash{}); !r.Equal {
		t.Fatalf("check after an incremental rebuild: %+v", r)
	}
	verify(t, dir)
}

// An embedder that fails halfway through a rebuild leaves the stored
// index as it was, and the report says how far it got.
func TestRebuildDirKeepsIndexOnFailure(t *testing.T) {
	c := newChat(t, "m1")
	c.steps(0, 150)
	dir := newDir(t, c.events, "")
	if _, _, err := Rebuild(ctx, osfs, dir, capsule.Config{}, Hash{}); err != nil {
		t.Fatal(err)
	}
	before := indexBytes(t, dir)
	e := &fake{dims: 8, model: "sha256:f", failAfter: 300}
	rep, wrote, err := Rebuild(ctx, osfs, dir, capsule.Config{}, e)
	if err == nil || wrote || !strings.Contains(err.Error(), "texts 257 to 450 of 450") {
		t.Fatalf("want a failure naming the batch, got wrote %v, %v", wrote, err)
	}
	if rep.Mode != ModeFull || rep.Embedded != 450 {
		t.Fatalf("report: %+v", rep)
	}
	if !bytes.Equal(indexBytes(t, dir), before) {
		t.Fatal("a failed rebuild changed the stored index")
	}
	verify(t, dir)
}

// FORMAT §11.7.2: release 0.1.0's placeholder is read as a stale index and
// rebuilt; storing it migrates the capsule first.
func TestFixture010PlaceholderRebuilds(t *testing.T) {
	dir := restore(t, "0.1.0", "conversation")
	s, err := Load(osfs, dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 1 || s.Index != nil || !strings.Contains(s.Problem, "version-1 placeholder") {
		t.Fatalf("load: version %d, problem %q", s.Version, s.Problem)
	}
	rep, wrote, err := Rebuild(ctx, osfs, dir, capsule.Config{}, Hash{})
	if err != nil || !wrote || rep.Mode != ModeFull || rep.Chunks == 0 {
		t.Fatalf("rebuild: %+v, %v", rep, err)
	}
	verify(t, dir)
	c, err := capsule.Open(osfs, dir, capsule.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Manifest().Schemas[schema.MemoryIndex]; v != 2 {
		t.Fatalf("the manifest names memory index version %d after the rebuild", v)
	}
	x, rep, _, err := Open(ctx, osfs, dir, Hash{})
	if err != nil || rep.Mode != ModeUnchanged {
		t.Fatalf("reopen: %+v, %v", rep, err)
	}
	hits, err := x.Search(ctx, Hash{}, "what does the readme say", 3)
	if err != nil || len(hits) == 0 {
		t.Fatalf("search: %v, %v", hits, err)
	}
}

// restore copies an embedded fixture capsule into a temporary folder.
func restore(t *testing.T, release, name string) string {
	t.Helper()
	all, err := fixtures.Capsules()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		if f.Release != release || f.Name != name {
			continue
		}
		dir := filepath.Join(t.TempDir(), name)
		for _, d := range append([]string{""}, f.Dirs...) {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for p, b := range f.Files {
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	t.Fatalf("no fixture %s/%s", release, name)
	return ""
}
