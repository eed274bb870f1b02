package capsule

import (
	"os"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

// gcCapsule is a capsule whose blob folder holds, besides the snapshot's
// blobs, one blob a journal attachment names and one blob nothing names.
func gcCapsule(t *testing.T) (c *Capsule, attached, orphan digest.Digest) {
	t.Helper()
	c = newCapsule(t)
	populate(t, c)
	attached, n, err := c.PutBlob(strings.NewReader("attached bytes\n"))
	if err != nil {
		t.Fatal(err)
	}
	commitAttachingJournal(t, c, attached, n)
	if orphan, _, err = c.PutBlob(strings.NewReader("left by an earlier snapshot\n")); err != nil {
		t.Fatal(err)
	}
	return c, attached, orphan
}

// TestGC removes exactly the blob nothing references (FORMAT §3.2), and
// removes nothing when the references it would rely on are damaged.
func TestGC(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, c *Capsule)
		want    *GCResult // nil: refused
		orphans int       // unreferenced-blob warnings after
	}{
		{"prunes the orphan", func(*testing.T, *Capsule) {}, &GCResult{Removed: 1, Bytes: 28, Kept: 4}, 0},
		{"snapshot changed", func(t *testing.T, c *Capsule) {
			appendTo(t, hostPath(c.Dir(), manifest.SnapshotPath), " ")
		}, nil, 1},
		{"committed journal changed", func(t *testing.T, c *Capsule) {
			p := hostPath(c.Dir(), manifest.JournalPath)
			b, _ := os.ReadFile(p)
			// Rename the attachment key in the committed line: a GC trusting
			// the line would take the attached blob for an orphan.
			b = []byte(strings.Replace(string(b), `"attachments"`, `"attachmentz"`, 1))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, 2}, // verify reads no attachment from a changed prefix either
		{"tail line with an attachment that does not decode", func(t *testing.T, c *Capsule) {
			appendTo(t, hostPath(c.Dir(), manifest.JournalPath), `{"attachments":[{"blob":`+"\n")
		}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, attached, orphan := gcCapsule(t)
			tc.damage(t, c)
			got, err := c.GC()
			if tc.want == nil && err == nil {
				t.Fatalf("GC of a damaged capsule = %+v, want a refusal", got)
			}
			if tc.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("GC (-want +got):\n%s", diff)
				}
			}
			if ok, _ := c.HasBlob(attached); !ok {
				t.Error("GC removed the blob a journal attachment names")
			}
			if ok, _ := c.HasBlob(orphan); ok != (tc.want == nil) {
				t.Errorf("orphan present = %v, want %v", ok, tc.want == nil)
			}
			r, err := Verify(vfs.OS{}, c.Dir(), VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, w := range r.Warnings {
				if w.Kind == KindUnreferenced {
					n++
				}
			}
			if n != tc.orphans {
				t.Errorf("unreferenced-blob warnings after GC = %d, want %d: %v", n, tc.orphans, r.Warnings)
			}
		})
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
