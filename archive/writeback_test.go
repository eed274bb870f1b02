package archive

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// countingFile discards writes and counts fsyncs, failing them if syncErr is set.
type countingFile struct {
	vfs.File
	syncs   atomic.Int32
	syncErr error
}

func (c *countingFile) Write(p []byte) (int, error) { return len(p), nil }
func (c *countingFile) Sync() error {
	c.syncs.Add(1)
	return c.syncErr
}

func TestWritebackSyncsEveryChunk(t *testing.T) {
	f := &countingFile{}
	w := newWriteback(f)
	buf := make([]byte, 1<<20)
	for i := 0; i < 3*earlyWriteback/len(buf)+1; i++ {
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	if got := f.syncs.Load(); got != 3 {
		t.Errorf("%d background fsyncs, want 3 (one per %d bytes)", got, earlyWriteback)
	}
}

func TestWritebackReportsSyncError(t *testing.T) {
	boom := errors.New("EIO")
	w := newWriteback(&countingFile{syncErr: boom})
	buf := make([]byte, 1<<20)
	var err error
	for i := 0; i < 3*earlyWriteback/len(buf) && err == nil; i++ {
		_, err = w.Write(buf)
	}
	if !errors.Is(err, boom) {
		t.Errorf("Write after a failed fsync: err = %v, want %v", err, boom)
	}
	if err := w.wait(); !errors.Is(err, boom) {
		t.Errorf("wait: err = %v, want %v", err, boom)
	}
}
