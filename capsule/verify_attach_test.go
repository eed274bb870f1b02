package capsule

import (
	"os"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

// commitAttachingJournal commits a journal of two events, the second a
// user message attaching blob d of size n (FORMAT §3.2, §7.5).
func commitAttachingJournal(t *testing.T, c *Capsule, d digest.Digest, n int64) {
	t.Helper()
	w := journal.NewWriter("m" + strings.Repeat("0", 26))
	var lines []byte
	for _, body := range []journal.UserMessage{
		{Text: "hello"},
		{Text: "see attached", Attachments: []journal.Attachment{{Blob: string(d), MediaType: "text/plain", Size: n}}},
	} {
		e, err := w.Next(journal.KindUser, 1, "2026-01-01T00:00:00Z", body)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, journal.Encode(e)...), '\n')
	}
	if err := vfs.WriteFile(c.FS(), hostPath(c.Dir(), manifest.JournalPath), lines, 0o644); err != nil {
		t.Fatal(err)
	}
	err := c.Commit(func(tx *Tx) error {
		return tx.SetJournal(manifest.Journal{Events: 2, Bytes: int64(len(lines)), Digest: digest.FromBytes(lines),
			Heads: map[string]manifest.Head{w.Machine(): manifest.Head(w.Head())}})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVerifyJournalAttachments checks a blob a journal attachment names
// counts as referenced (no warning), and that its absence or another size
// is an error (FORMAT §3.2).
func TestVerifyJournalAttachments(t *testing.T) {
	for _, c := range []struct {
		name     string
		size     func(n int64) int64 // the size the attachment records
		remove   bool
		problems []string
	}{
		{"present", func(n int64) int64 { return n }, false, nil},
		{"missing", func(n int64) int64 { return n }, true, []string{"artifacts/blobs/" + digest.FromString("attached bytes\n").Hex() + " missing"}},
		{"other size", func(n int64) int64 { return n + 1 }, false, []string{manifest.JournalPath + " reference"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp := newCapsule(t)
			populate(t, cp)
			d, n, err := cp.PutBlob(strings.NewReader("attached bytes\n"))
			if err != nil {
				t.Fatal(err)
			}
			commitAttachingJournal(t, cp, d, c.size(n))
			if c.remove {
				if err := os.Remove(cp.Blobs().Path(d)); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Verify(vfs.OS{}, cp.Dir(), VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.problems, kinds(r.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if len(r.Warnings) != 0 {
				t.Errorf("warnings: %v (an attached blob is referenced)", r.Warnings)
			}
		})
	}
}
