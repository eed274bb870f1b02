package capsule

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

var journalLines = []byte("{\"n\":1}\n{\"n\":2}\n")

// populate gives c three blobs, a snapshot referencing them, working
// memory and a two-event committed journal.
func populate(t *testing.T, c *Capsule) *Snapshot {
	t.Helper()
	s := NewSnapshot()
	for i, body := range []string{"hello\n", "#!/bin/sh\necho hi\n", strings.Repeat("big ", 100000)} {
		d, n, err := c.PutBlob(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		s.Entries = append(s.Entries, Entry{Path: fmt.Sprintf("f%d.txt", i), Type: TypeFile, Size: n, Blob: d, Exec: i == 1})
	}
	s.Entries = append(s.Entries, Entry{Path: "empty", Type: TypeDir}, Entry{Path: "link", Type: TypeSymlink, Target: "f0.txt"})
	if err := vfs.WriteFile(c.FS(), hostPath(c.Dir(), manifest.JournalPath), journalLines, 0o644); err != nil {
		t.Fatal(err)
	}
	j := manifest.Journal{Events: 2, Bytes: int64(len(journalLines)), Digest: digest.FromBytes(journalLines), Heads: map[string]manifest.Head{
		"m1": {Seq: 2, ID: string(digest.FromString("e2")), Clock: 2},
	}}
	err := c.Commit(func(tx *Tx) error {
		if err := tx.SetSnapshot(s); err != nil {
			return err
		}
		if err := tx.SetJournal(j); err != nil {
			return err
		}
		return tx.SetWorkingMemory([]byte("notes\n"))
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func blobPath(c *Capsule, body string) string {
	return c.Blobs().Path(digest.FromString(body))
}

func writeOver(t *testing.T, name string, b []byte) {
	t.Helper()
	_ = os.Chmod(name, 0o644)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// kinds returns "path kind" for each problem, to compare with want.
func kinds(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Path+" "+string(p.Kind))
	}
	return out
}

// FORMAT §3: every tampering is caught and named, alone or all at once.
func TestVerifyCatchesTampering(t *testing.T) {
	hx := func(body string) string { return digest.FromString(body).Hex() }
	big := strings.Repeat("big ", 100000)
	tampers := []struct {
		name  string
		do    func(t *testing.T, c *Capsule)
		wantP []string // "path kind" of each problem
		wantW []string // and of each warning
	}{
		{"truncated file", func(t *testing.T, c *Capsule) {
			writeOver(t, hostPath(c.Dir(), manifest.WorkingMemoryPath), []byte("note"))
		}, []string{"memory/working_memory.md size"}, nil},
		{"changed byte", func(t *testing.T, c *Capsule) {
			writeOver(t, hostPath(c.Dir(), manifest.WorkingMemoryPath), []byte("nOtes\n"))
		}, []string{"memory/working_memory.md digest"}, nil},
		{"deleted index", func(t *testing.T, c *Capsule) {
			os.Remove(hostPath(c.Dir(), manifest.IndexPath))
		}, []string{"memory/vector_index/index.json missing"}, nil},
		{"corrupt blob", func(t *testing.T, c *Capsule) {
			writeOver(t, blobPath(c, "hello\n"), []byte("HELLO\n"))
		}, []string{"artifacts/blobs/" + hx("hello\n") + " corrupt"}, nil},
		{"truncated big blob", func(t *testing.T, c *Capsule) {
			writeOver(t, blobPath(c, big), []byte(big[:1000]))
		}, []string{"artifacts/blobs/" + hx(big) + " corrupt"}, nil},
		{"missing blob", func(t *testing.T, c *Capsule) {
			os.Remove(blobPath(c, "hello\n"))
		}, []string{"artifacts/blobs/" + hx("hello\n") + " missing"}, nil},
		{"extra files", func(t *testing.T, c *Capsule) {
			writeOver(t, hostPath(c.Dir(), "evil.sh"), []byte("rm -rf /"))
			writeOver(t, hostPath(c.Dir(), "artifacts/blobs/notahash"), []byte("x"))
			os.Mkdir(hostPath(c.Dir(), "memory/extra"), 0o755)
		}, []string{"artifacts/blobs/notahash unexpected", "evil.sh unexpected", "memory/extra unexpected"}, nil},
		{"symlink instead of file", func(t *testing.T, c *Capsule) {
			p := hostPath(c.Dir(), manifest.WorkingMemoryPath)
			os.Remove(p)
			os.Symlink("/etc/passwd", p)
		}, []string{"memory/working_memory.md unexpected"}, nil},
		{"journal truncated", func(t *testing.T, c *Capsule) {
			writeOver(t, hostPath(c.Dir(), manifest.JournalPath), journalLines[:10])
		}, []string{"memory/timeline_events.jsonl size"}, nil},
		{"journal committed line changed", func(t *testing.T, c *Capsule) {
			writeOver(t, hostPath(c.Dir(), manifest.JournalPath), bytes.Replace(journalLines, []byte("2"), []byte("3"), 1))
		}, []string{"memory/timeline_events.jsonl digest"}, nil},
		{"journal tail unchecked", func(t *testing.T, c *Capsule) {
			writeOver(t, hostPath(c.Dir(), manifest.JournalPath), append(append([]byte{}, journalLines...), "{\"n\":3}\n"...))
		}, nil, []string{"memory/timeline_events.jsonl unchecked"}},
		{"env secret value", func(t *testing.T, c *Capsule) {
			p := hostPath(c.Dir(), manifest.EnvironmentPath)
			b, _ := os.ReadFile(p)
			writeOver(t, p, bytes.Replace(b, []byte(`"env": {}`), []byte(`"env": {"X": "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"}`), 1))
		}, []string{"environment/spec.json environment", "environment/spec.json size"}, nil},
		{"snapshot references a missing blob", func(t *testing.T, c *Capsule) {
			p := hostPath(c.Dir(), manifest.SnapshotPath)
			b, _ := os.ReadFile(p)
			writeOver(t, p, bytes.Replace(b, []byte(hx("hello\n")), []byte(hx("other")), 1))
		}, []string{"artifacts/blobs/" + hx("other") + " missing", "artifacts/snapshot.json digest"},
			[]string{"artifacts/blobs/" + hx("hello\n") + " unreferenced"}},
		{"manifest broken", func(t *testing.T, c *Capsule) {
			p := hostPath(c.Dir(), manifest.FileName)
			b, _ := os.ReadFile(p)
			writeOver(t, p, bytes.Replace(b, []byte(`"epoch": 0`), []byte(`"epoch": -1`), 1))
		}, []string{"manifest.json manifest"}, nil},
		{"manifest deleted", func(t *testing.T, c *Capsule) {
			os.Remove(hostPath(c.Dir(), manifest.FileName))
		}, []string{"manifest.json missing"}, nil},
		{"leftovers are warnings", func(t *testing.T, c *Capsule) {
			writeOver(t, hostPath(c.Dir(), "memory/.tmp-working_memory.md-3"), []byte("half"))
			writeOver(t, hostPath(c.Dir(), manifest.JournalPath+".quarantine-1"), []byte("{\"torn"))
			writeOver(t, hostPath(c.Dir(), manifest.SignatureName), []byte("sig"))
		}, nil, []string{"manifest.json.sig unchecked", "memory/.tmp-working_memory.md-3 leftover", "memory/timeline_events.jsonl.quarantine-1 quarantine"}},
	}
	// These touch different files, so together they must give the union.
	independent := map[string]bool{"changed byte": true, "truncated big blob": true, "missing blob": true,
		"extra files": true, "env secret value": true, "journal truncated": true, "leftovers are warnings": true}
	all := newCapsule(t)
	populate(t, all)
	var wantAll []string
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapsule(t)
			populate(t, c)
			tc.do(t, c)
			r, err := Verify(vfs.OS{}, c.Dir(), VerifyOptions{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantP, kinds(r.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, r.Problems)
			}
			if diff := cmp.Diff(tc.wantW, kinds(r.Warnings)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s\n%v", diff, r.Warnings)
			}
			for _, p := range r.Problems {
				if p.Detail == "" {
					t.Errorf("problem without detail: %+v", p)
				}
			}
		})
		if independent[tc.name] {
			tc.do(t, all)
			wantAll = append(wantAll, tc.wantP...)
		}
	}
	// Several independent tamperings at once: every one is reported.
	r, err := Verify(vfs.OS{}, all.Dir(), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, k := range kinds(r.Problems) {
		got[k] = true
	}
	for _, w := range wantAll {
		if !got[w] {
			t.Errorf("with all tamperings applied, %q was not reported; got %v", w, kinds(r.Problems))
		}
	}
}

func TestVerifyHooks(t *testing.T) {
	c := newCapsule(t)
	populate(t, c)
	tail := "{\"n\":3}\n"
	writeOver(t, hostPath(c.Dir(), manifest.JournalPath), append(append([]byte{}, journalLines...), tail...))
	writeOver(t, hostPath(c.Dir(), manifest.SignatureName), []byte("sig"))
	var gotTail string
	var gotCommitted manifest.Journal
	opts := VerifyOptions{
		JournalTail: func(r io.Reader, committed manifest.Journal) []Problem {
			b, _ := io.ReadAll(r)
			gotTail, gotCommitted = string(b), committed
			return []Problem{{Detail: "line 3: prev does not match"}}
		},
		Signature: func(m, sig []byte) error {
			if !bytes.HasPrefix(m, []byte("{\n  \"format\": 1")) || string(sig) != "sig" {
				t.Errorf("signature hook got manifest %.20q sig %q", m, sig)
			}
			return fmt.Errorf("signature by unknown key")
		},
	}
	r, err := Verify(vfs.OS{}, c.Dir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if gotTail != tail || gotCommitted.Bytes != int64(len(journalLines)) {
		t.Errorf("tail hook got %q after %d bytes", gotTail, gotCommitted.Bytes)
	}
	want := []Problem{
		{Path: "manifest.json.sig", Kind: KindSignature, Detail: "signature by unknown key"},
		{Path: "memory/timeline_events.jsonl", Kind: KindJournal, Detail: "line 3: prev does not match"},
	}
	if diff := cmp.Diff(want, r.Problems); diff != "" {
		t.Error(diff)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "2 problem(s)") {
		t.Errorf("Err() = %v", err)
	}
}

func TestVerifyPopulatedOK(t *testing.T) {
	c := newCapsule(t)
	populate(t, c)
	r := mustVerify(t, vfs.OS{}, c.Dir())
	if r.Blobs != 3 || r.Files != 5 || len(r.Warnings) != 0 {
		t.Errorf("report %+v", r)
	}
	if _, err := Verify(vfs.OS{}, filepath.Join(t.TempDir(), "nope"), VerifyOptions{}); err == nil {
		t.Error("verify of a missing directory returned no error")
	}
}

// FORMAT §3.3: the committed journal prefix ends on a line boundary; a
// manifest whose journal digest covers part of a line is refused even when
// the digest of those bytes matches.
func TestVerifyPrefixEndsOnLine(t *testing.T) {
	c := newCapsule(t)
	populate(t, c)
	cut := bytes.IndexByte(journalLines, '\n') + 4 // inside the second line
	j := manifest.Journal{Events: 1, Bytes: int64(cut), Digest: digest.FromBytes(journalLines[:cut]), Heads: map[string]manifest.Head{
		"m1": {Seq: 1, ID: string(digest.FromString("e1")), Clock: 1},
	}}
	if err := c.Commit(func(tx *Tx) error { return tx.SetJournal(j) }); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(vfs.OS{}, c.Dir(), VerifyOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{manifest.JournalPath + " " + string(KindJournal)}
	if diff := cmp.Diff(want, kinds(r.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s\n%v", diff, r.Problems)
	}
}
