package capsule

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"
)

var testTime = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func testConfig() InitConfig {
	return InitConfig{
		Config: Config{Writer: manifest.Writer{Release: "0.1.0", Commit: "test"}, Now: func() time.Time { return testTime }},
		Name:   "test-agent",
		ID:     "01J2Z3K4M5N6P7Q8R9S0T1V2W3",
	}
}

// newCapsule creates a capsule on the real file system in a temporary directory.
func newCapsule(t *testing.T) *Capsule {
	t.Helper()
	c, err := Init(vfs.OS{}, filepath.Join(t.TempDir(), "cap"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustVerify(t *testing.T, fsys vfs.FS, dir string) *Report {
	t.Helper()
	r, err := Verify(fsys, dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("verify %s: %v", dir, r.Problems)
	}
	return r
}

// FORMAT §1: init creates the seed's layout, and it verifies with no
// problem and no warning.
func TestInitLayoutVerifies(t *testing.T) {
	for _, fsys := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{{"os", vfs.OS{}, filepath.Join(t.TempDir(), "cap")}, {"mem", vfs.NewMem(), "/agents/cap"}} {
		t.Run(fsys.name, func(t *testing.T) {
			c, err := Init(fsys.fs, fsys.dir, testConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, rel := range []string{"manifest.json", "memory/working_memory.md", "memory/timeline_events.jsonl",
				"memory/vector_index/index.json", "artifacts/snapshot.json", "artifacts/blobs", "environment/spec.json"} {
				if _, err := fsys.fs.Stat(hostPath(fsys.dir, rel)); err != nil {
					t.Errorf("missing %s: %v", rel, err)
				}
			}
			r := mustVerify(t, fsys.fs, fsys.dir)
			if len(r.Warnings) > 0 {
				t.Errorf("warnings on a new capsule: %v", r.Warnings)
			}
			if r.Files != 5 {
				t.Errorf("checked %d files, want 5", r.Files)
			}
			m := c.Manifest()
			want := manifest.Agent{ID: "01J2Z3K4M5N6P7Q8R9S0T1V2W3", Name: "test-agent", Created: "2026-07-01T12:00:00Z"}
			if diff := cmp.Diff(want, m.Agent); diff != "" {
				t.Error(diff)
			}
			if m.Holder != (manifest.Holder{}) || m.Journal.Events != 0 || m.Journal.Digest != manifest.EmptyDigest {
				t.Errorf("new capsule holder %+v journal %+v", m.Holder, m.Journal)
			}
			if m.Writer.Commit != "test" {
				t.Errorf("writer %+v", m.Writer)
			}
		})
	}
}

func TestInitNewIDsAreULIDsAndDiffer(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := testConfig()
	cfg.ID = ""
	a, err := Init(fsys, "/a", cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Init(fsys, "/b", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !manifest.IsULID(a.ID()) || a.ID() == b.ID() {
		t.Errorf("IDs %q and %q", a.ID(), b.ID())
	}
	if u, err := ulid.ParseStrict(a.ID()); err != nil || !ulid.Time(u.Time()).Equal(testTime) {
		t.Errorf("ID %s does not carry the creation time %v (%v)", a.ID(), testTime, err)
	}
}

func TestInitRefusesNonEmptyAndBadID(t *testing.T) {
	fsys := vfs.NewMem()
	if err := vfs.MkdirAllDurable(fsys, "/full", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFile(fsys, "/full/x", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(fsys, "/full", testConfig()); !errors.Is(err, ErrExists) {
		t.Errorf("init into a non-empty dir: got %v, want ErrExists", err)
	}
	if err := fsys.Mkdir("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(fsys, "/empty", testConfig()); err != nil {
		t.Errorf("init into an empty dir: %v", err)
	}
	cfg := testConfig()
	cfg.ID = "not-a-ulid"
	if _, err := Init(fsys, "/bad", cfg); err == nil || !strings.Contains(err.Error(), "not a ULID") {
		t.Errorf("init with a bad ID: %v", err)
	}
}

func TestOpenRefusesNonCapsuleAndNewerSchema(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.Mkdir("/x", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fsys, "/x", Config{}); !errors.Is(err, ErrNotCapsule) {
		t.Errorf("got %v, want ErrNotCapsule", err)
	}
	if _, err := Init(fsys, "/c", testConfig()); err != nil {
		t.Fatal(err)
	}
	b, _ := vfs.ReadFile(fsys, "/c/manifest.json")
	b = bytes.Replace(b, []byte(`"journal": 1`), []byte(`"journal": 9`), 1)
	if err := vfs.WriteFile(fsys, "/c/manifest.json", b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(fsys, "/c", Config{})
	if !errors.Is(err, manifest.ErrUnsupported) || !strings.Contains(err.Error(), "journal schema version 9 (written by "+testConfig().Writer.Release+") is newer") {
		t.Errorf("got %v, want the journal version refused", err)
	}
}

// FORMAT §4.2: a commit replaces files and the manifest together, records
// the writer and removes a stale signature.
func TestCommitReplacesFilesAndRemovesSignature(t *testing.T) {
	c := newCapsule(t)
	sig := hostPath(c.Dir(), manifest.SignatureName)
	if err := os.WriteFile(sig, []byte("old signature"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := c.cfg
	cfg.Writer.Commit = "newer"
	c2, err := Open(vfs.OS{}, c.Dir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = c2.Commit(func(tx *Tx) error {
		tx.SetHolder(manifest.Holder{Node: "n1", Epoch: 1})
		return tx.SetWorkingMemory([]byte("# notes\nremember the milk\n"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sig); !os.IsNotExist(err) {
		t.Errorf("signature still present after a commit: %v", err)
	}
	if _, err := os.Stat(hostPath(c.Dir(), PendingDir)); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", PendingDir, err)
	}
	mustVerify(t, vfs.OS{}, c.Dir())
	re, err := Open(vfs.OS{}, c.Dir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	wm, err := re.WorkingMemory()
	if err != nil || string(wm) != "# notes\nremember the milk\n" {
		t.Errorf("working memory %q, %v", wm, err)
	}
	if got := re.Manifest(); got.Holder != (manifest.Holder{Node: "n1", Epoch: 1}) || got.Writer.Commit != "newer" {
		t.Errorf("holder %+v writer %+v", got.Holder, got.Writer)
	}
}

func TestCommitFailureChangesNothing(t *testing.T) {
	c := newCapsule(t)
	before, _ := os.ReadFile(hostPath(c.Dir(), manifest.FileName))
	boom := errors.New("boom")
	err := c.Commit(func(tx *Tx) error {
		if err := tx.SetWorkingMemory([]byte("draft")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	after, _ := os.ReadFile(hostPath(c.Dir(), manifest.FileName))
	if !bytes.Equal(before, after) {
		t.Error("manifest changed by a failed commit")
	}
	r := mustVerify(t, vfs.OS{}, c.Dir())
	if len(r.Warnings) > 0 {
		t.Errorf("warnings: %v", r.Warnings)
	}
}

func TestCommitDetectsAnotherWriter(t *testing.T) {
	c := newCapsule(t)
	other, err := Open(vfs.OS{}, c.Dir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SetHolder(manifest.Holder{Node: "n2", Epoch: 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetHolder(manifest.Holder{Node: "n1", Epoch: 1}); !errors.Is(err, ErrConflict) {
		t.Errorf("stale writer: got %v, want ErrConflict", err)
	}
}

// FORMAT §4.2: a writer refuses to commit while .commit/ exists, whether
// another writer is staging (no manifest yet) or one crashed past its commit
// point (.commit/manifest.json, which only recovery may roll forward). The
// refusal comes before fn runs and leaves every byte of .commit/ and of
// manifest.json as it was.
func TestCommitRefusedWhilePending(t *testing.T) {
	for _, tc := range []struct {
		name   string
		staged map[string]string // name in .commit/ -> content
	}{
		{"staging", map[string]string{pendingName("memory/working_memory.md"): "the other writer's notes\n"}},
		{"past the commit point", map[string]string{
			pendingName("memory/working_memory.md"): "the other writer's notes\n",
			manifest.FileName:                       `{"the other writer's":"manifest"}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapsule(t)
			pending := hostPath(c.Dir(), PendingDir)
			if err := os.Mkdir(pending, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range tc.staged {
				if err := os.WriteFile(filepath.Join(pending, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := readTree(t, c.Dir())
			ran := false
			err := c.Commit(func(tx *Tx) error {
				ran = true
				return tx.SetWorkingMemory([]byte("my notes\n"))
			})
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), PendingDir) {
				t.Errorf("commit with %s present: got %v, want ErrConflict naming %s", PendingDir, err, PendingDir)
			}
			if ran {
				t.Error("fn ran although the commit was refused")
			}
			if diff := cmp.Diff(before, readTree(t, c.Dir())); diff != "" {
				t.Errorf("a refused commit changed the capsule (-before +after):\n%s", diff)
			}
		})
	}
}

// readTree returns the content of every regular file under dir, by slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestSetJournalNeedsTheBytes(t *testing.T) {
	c := newCapsule(t)
	line := []byte(`{"id":"x"}` + "\n")
	j := manifest.Journal{Events: 1, Bytes: int64(len(line)), Digest: digest.FromBytes(line),
		Heads: map[string]manifest.Head{"m1": {Seq: 1, ID: string(digest.FromString("e1")), Clock: 1, Epoch: 0}}}
	if err := c.Commit(func(tx *Tx) error { return tx.SetJournal(j) }); err == nil {
		t.Fatal("committed a journal summary for bytes that are not on disk")
	}
	if err := os.WriteFile(hostPath(c.Dir(), manifest.JournalPath), line, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(func(tx *Tx) error { return tx.SetJournal(j) }); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, vfs.OS{}, c.Dir())
}
