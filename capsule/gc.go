package capsule

import (
	"bufio"
	"fmt"
	"io"
	"path"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
)

// GCResult says what GC did.
type GCResult struct {
	Removed int   `json:"removed"`       // blobs removed
	Bytes   int64 `json:"removed_bytes"` // their bytes
	Kept    int   `json:"kept"`          // blobs still referenced
}

// GC removes the blobs that neither the committed snapshot, an attachment
// of the journal (committed or not) nor the originals a migration kept
// (FORMAT §11.5) references: the blobs of
// earlier snapshots, which a commit never removes (FORMAT §3.2). It runs as
// a commit, so every check a writer of the capsule goes through applies to
// it (another writer, a node holding the capsule), and it records this
// build as the writer.
//
// It fails closed: the snapshot and the committed journal are checked
// against the manifest first, and a journal line that names attachments
// but does not decode stops it, so no blob is ever removed on the strength
// of damaged references.
func (c *Capsule) GC() (*GCResult, error) {
	var res GCResult
	err := c.Commit(func(tx *Tx) error {
		refs, err := c.referencedBlobs()
		if err != nil {
			return err
		}
		return c.removeUnreferenced(refs, &res)
	})
	if err != nil {
		return nil, fmt.Errorf("gc %s: %w", c.dir, err)
	}
	return &res, nil
}

// removeUnreferenced removes every blob not in refs, then syncs the blob
// folder once.
func (c *Capsule) removeUnreferenced(refs map[digest.Digest]bool, res *GCResult) error {
	all, err := c.blobs.List()
	if err != nil {
		return err
	}
	for _, b := range all {
		if refs[b.Digest] {
			res.Kept++
			continue
		}
		if err := c.fsys.Remove(c.blobs.Path(b.Digest)); err != nil {
			return fmt.Errorf("remove blob %s: %w", b.Digest.Short(), err)
		}
		res.Removed++
		res.Bytes += b.Size
	}
	if res.Removed == 0 {
		return nil
	}
	return c.fsys.SyncDir(c.blobs.Dir())
}

// referencedBlobs returns the blobs the snapshot and the journal's
// attachments reference, after checking both against the manifest.
func (c *Capsule) referencedBlobs() (map[digest.Digest]bool, error) {
	s, err := c.Snapshot()
	if err != nil {
		return nil, err
	}
	refs := map[digest.Digest]bool{}
	for d := range originalBlobs(c.Manifest()) { // kept for a rollback (FORMAT §11.5)
		refs[d] = true
	}
	for d := range s.Blobs() {
		refs[d] = true
	}
	if err := c.attachedBlobs(refs); err != nil {
		return nil, err
	}
	return refs, nil
}

// attachedBlobs adds to refs the blob of every attachment of the journal,
// once its committed prefix matches the manifest.
func (c *Capsule) attachedBlobs(refs map[digest.Digest]bool) error {
	rel := manifest.JournalPath
	f, err := c.fsys.Open(c.path(rel))
	if err != nil {
		return err
	}
	defer f.Close()
	want := c.Manifest().Journal
	got, n, err := hashReader(io.LimitReader(f, want.Bytes), nil)
	if err != nil {
		return err
	}
	if n != want.Bytes || got != want.Digest {
		return &DigestError{Path: rel, Want: want.Digest, Got: got}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return scanAttached(f, refs)
}

// scanAttached adds the attachment blobs of every journal line of r.
func scanAttached(r io.Reader, refs map[digest.Digest]bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), journal.MaxLine+1)
	for n := 1; sc.Scan(); n++ {
		_, as, err := journal.LineAttachments(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%w: %s line %d names attachments but does not decode: %v", ErrCorrupt, path.Base(manifest.JournalPath), n, err)
		}
		for _, a := range as {
			d, err := digest.Parse(a.Blob)
			if err != nil {
				return fmt.Errorf("%w: %s line %d: attachment blob: %v", ErrCorrupt, path.Base(manifest.JournalPath), n, err)
			}
			refs[d] = true
		}
	}
	return sc.Err()
}
