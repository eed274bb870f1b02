package store

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// TestCASReceiveCrash cuts the power at every durable step of storing the
// blobs of a push stream the way Push does (receive each, finish it),
// with blobs held in memory and one streamed to its file, and the store's
// directory synced after each blob, as another push may do at any time:
// after the crash every name in the store holds the bytes of its digest
// (temporary files may remain, never under a blob's name), and once the
// push completed every blob is there. docs/PROTOCOL.md §4a, §5.
func TestCASReceiveCrash(t *testing.T) {
	frames := []frame{honest(randomBytes(1, 100)), honest(randomBytes(2, ChunkSize)), honest(randomBytes(3, ChunkSize+10))}
	const dir = "/agents/a/cas"
	vfstest.ForEachCrashPoint(t, nil, func(fsys vfs.FS) error {
		c := Disk{FS: fsys, Dir: dir}
		for _, f := range frames {
			if err := receiveAll(c, streamOf(t, f)); err != nil { // ends with c.Sync
				return err
			}
		}
		return nil
	}, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		ents, _ := fsys.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), vfs.TempPrefix) {
				continue
			}
			b, err := vfs.ReadFile(fsys, filepath.Join(dir, e.Name()))
			if err != nil || digest.FromBytes(b).Hex() != e.Name() {
				t.Errorf("%s: %d bytes (%v) that do not hash to its name", e.Name(), len(b), err)
			}
		}
		if !at.Done() {
			return
		}
		c := Disk{FS: fsys, Dir: dir}
		for _, f := range frames {
			if !casHolds(c, f.d, int64(len(f.data))) {
				t.Errorf("blob %s lost although the push completed", f.d.Short())
			}
		}
	})
}
