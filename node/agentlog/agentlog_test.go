package agentlog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

const wall = "2026-01-01T00:00:00.000000000Z"

// newCapsule makes a capsule in a temporary folder whose journal holds n
// user messages, the i-th attaching blob(i) when attach(i), all committed
// by its manifest. It returns the folder and the journal's path.
func newCapsule(t *testing.T, n int, attach func(i int) bool, blob func(i int) string) (string, string) {
	t.Helper()
	fsys := vfs.OS{}
	dir := filepath.Join(t.TempDir(), "capsule")
	c, err := capsule.Init(fsys, dir, capsule.InitConfig{ID: "01JAAAAAAAAAAAAAAAAAAAAAAA"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(manifest.JournalPath))
	w := journal.NewWriter("m1")
	var lines []byte
	prev := ""
	for i := range n {
		body := journal.UserMessage{Text: "hello"}
		if attach(i) {
			body.Attachments = []journal.Attachment{{Blob: blob(i), MediaType: "text/plain", Size: int64(i)}}
		}
		e, err := w.Next(journal.KindUser, 1, wall, journal.UserMessage{Text: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		// Sealed over a body Next would refuse (a bad digest), as a
		// writer that did not validate it would have.
		e.Body, _ = json.Marshal(body)
		if i > 0 {
			e.Prev = prev
		}
		if err := journal.Seal(&e); err != nil {
			t.Fatal(err)
		}
		prev = e.ID
		lines = append(append(lines, journal.Encode(e)...), '\n')
	}
	if err := os.WriteFile(path, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(fsys, path, "m1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	sum := l.Summary()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	j := manifest.Journal{Events: sum.Events, Bytes: sum.Bytes, Digest: sum.Digest, Heads: map[string]manifest.Head{}}
	for m, h := range sum.Heads {
		j.Heads[m] = manifest.Head{Seq: h.Seq, ID: h.ID, Clock: h.Clock, Epoch: h.Epoch}
	}
	if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetJournal(j) }); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func blobOf(i int) string { return string(digest.FromBytes([]byte{byte(i)})) }

func every(k int) func(int) bool { return func(i int) bool { return i%k == 0 } }

// OpenChecked opens a journal whose committed prefix matches the
// manifest and reports its summary; the checks capsule.VerifyJournal made
// before it are all still made (FORMAT §7.7).
func TestOpenCheckedRefusesWhatVerifyJournalRefused(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		dir, _ := newCapsule(t, 5, every(2), blobOf)
		l, err := OpenChecked(vfs.OS{}, dir, "m1", 1)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if got := l.Summary().Events; got != 5 {
			t.Errorf("events %d, want 5", got)
		}
	})
	t.Run("changed committed byte", func(t *testing.T) {
		dir, path := newCapsule(t, 5, every(2), blobOf)
		b, _ := os.ReadFile(path)
		i := strings.Index(string(b), "hello")
		b[i] = 'j'
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenChecked(vfs.OS{}, dir, "m1", 1); err == nil {
			t.Error("a journal whose committed prefix changed opened")
		}
	})
	t.Run("shorter than committed", func(t *testing.T) {
		dir, path := newCapsule(t, 5, every(2), blobOf)
		fi, _ := os.Stat(path)
		if err := os.Truncate(path, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenChecked(vfs.OS{}, dir, "m1", 1); err == nil {
			t.Error("a journal shorter than committed opened")
		}
	})
	t.Run("no journal file", func(t *testing.T) {
		dir, path := newCapsule(t, 0, every(2), blobOf)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenChecked(vfs.OS{}, dir, "m1", 1); err == nil || !strings.Contains(err.Error(), "layout file missing") {
			t.Errorf("open of a capsule without a journal: %v, want it refused", err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Error("the refused open created the journal")
		}
	})
	t.Run("bad attachment digest", func(t *testing.T) {
		dir, _ := newCapsule(t, 3, every(2), func(int) string { return "sha256:nothex" })
		if _, err := OpenChecked(vfs.OS{}, dir, "m1", 1); err == nil || !strings.Contains(err.Error(), "attachment blob") {
			t.Errorf("open: %v, want it refused naming the attachment", err)
		}
	})
	t.Run("unreadable manifest", func(t *testing.T) {
		dir, _ := newCapsule(t, 1, every(2), blobOf)
		if err := os.WriteFile(filepath.Join(dir, manifest.FileName), []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenChecked(vfs.OS{}, dir, "m1", 1); err == nil {
			t.Error("a capsule whose manifest does not parse opened")
		}
	})
}

// Scan indexes only what was appended since the last scan, and starts
// over on a shorter (another) journal.
func TestAttachmentsScanIsIncremental(t *testing.T) {
	_, path := newCapsule(t, 10, every(3), blobOf)
	fsys := vfs.OS{}
	fi, _ := os.Stat(path)
	var x Attachments
	if err := x.Scan(fsys, path, fi.Size()); err != nil {
		t.Fatal(err)
	}
	if got := len(x.List()); got != 4 { // events 0, 3, 6, 9
		t.Fatalf("%d blobs indexed, want 4", got)
	}
	// Appended after the scan: only the new line is read.
	l, err := Open(fsys, path, "m1", 1, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	body := journal.UserMessage{Text: "more", Attachments: []journal.Attachment{{Blob: blobOf(99), MediaType: "text/plain", Size: 1}}}
	if _, err := l.Append(journal.KindUser, 1, wall, body); err != nil {
		t.Fatal(err)
	}
	end := l.Summary().Bytes
	_ = l.Close()
	if err := x.Scan(fsys, path, end); err != nil {
		t.Fatal(err)
	}
	if got := len(x.List()); got != 5 {
		t.Fatalf("%d blobs after the append, want 5", got)
	}
	// Another, shorter journal: indexed afresh.
	_, other := newCapsule(t, 2, every(1), func(i int) string { return blobOf(50 + i) })
	ofi, _ := os.Stat(other)
	if err := x.Scan(fsys, other, ofi.Size()); err != nil {
		t.Fatal(err)
	}
	if got := len(x.List()); got != 2 {
		t.Errorf("%d blobs after scanning a shorter journal, want 2 (its own)", got)
	}
}
