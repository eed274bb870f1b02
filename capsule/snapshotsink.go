package capsule

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// entrySink receives a snapshot's entries in path order.
type entrySink interface {
	add(e Entry) error
}

// sliceSink keeps the entries in memory, for BuildSnapshot.
type sliceSink struct{ entries []Entry }

func (s *sliceSink) add(e Entry) error {
	s.entries = append(s.entries, e)
	return nil
}

// fileSink writes snapshot.json as the entries arrive, byte for byte what
// Snapshot.Marshal writes, to a temporary file beside the snapshot; stage
// then hands it to a commit. A crash leaves at most the temporary file,
// which the next Open removes (FORMAT §4.3).
type fileSink struct {
	fsys vfs.FS
	tmp  string
	f    vfs.File
	w    *bufio.Writer
	n    int
	line []byte
}

func newFileSink(fsys vfs.FS, final string) (*fileSink, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	tmp := filepath.Join(filepath.Dir(final), vfs.TempPrefix+filepath.Base(final)+"-"+hex.EncodeToString(b[:]))
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return nil, err
	}
	s := &fileSink{fsys: fsys, tmp: tmp, f: f, w: bufio.NewWriterSize(f, 64<<10)}
	fmt.Fprintf(s.w, "{\"version\": %d, \"entries\": [", SnapshotVersion)
	return s, nil
}

func (s *fileSink) add(e Entry) error {
	s.line = s.line[:0]
	if s.n > 0 {
		s.line = append(s.line, ',')
	}
	s.line = append(s.line, "\n  "...)
	s.line = appendEntry(s.line, e)
	s.n++
	_, err := s.w.Write(s.line)
	return err
}

// stage ends the document and stages it as the commit's snapshot.json.
func (s *fileSink) stage(tx *Tx) error {
	if s.n > 0 {
		s.w.WriteByte('\n')
	}
	s.w.WriteString("]}\n")
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	r, err := s.fsys.Open(s.tmp)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer r.Close()
	return tx.SetFile(manifest.SnapshotPath, r)
}

// remove deletes the temporary file (not durably: a leftover is removed
// by the next Open).
func (s *fileSink) remove() {
	if s.f != nil {
		s.f.Close()
	}
	_ = s.fsys.Remove(s.tmp)
}
