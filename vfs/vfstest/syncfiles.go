package vfstest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// syncBatch is enough files for OS.SyncFiles to take its syncfs path.
const syncBatch = 40

// testSyncFiles: vfs.SyncFiles of a batch leaves every file's contents as
// written, on the FS's own SyncFiles and on the fallback of one fsync per
// file; a missing name or a directory is an error.
func testSyncFiles(t *testing.T, e env) {
	for _, tc := range []struct {
		name string
		fsys vfs.FS
	}{{"own", e.fsys}, {"fallback", hideSyncFiles{e.fsys}}} {
		t.Run(tc.name, func(t *testing.T) {
			e := env{t: t, fsys: tc.fsys, root: e.p(tc.name)}
			e.mkdir(".")
			var names []string
			for i := range syncBatch {
				name := fmt.Sprintf("f%02d", i)
				f := e.open(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
				_, err := f.Write([]byte("content of " + name))
				wantNoErr(t, "Write", err)
				wantNoErr(t, "Close", f.Close())
				names = append(names, e.p(name))
			}
			wantNoErr(t, "SyncFiles", vfs.SyncFiles(e.fsys, names))
			wantNoErr(t, "SyncFiles of none", vfs.SyncFiles(e.fsys, nil))
			for i := range syncBatch {
				name := fmt.Sprintf("f%02d", i)
				if got := e.read(name); got != "content of "+name {
					t.Errorf("%s holds %q after SyncFiles", name, got)
				}
			}
			if err := vfs.SyncFiles(e.fsys, append(names, e.p("missing"))); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("SyncFiles with a missing name = %v, want ErrNotExist", err)
			}
			e.mkdir("sub")
			if err := vfs.SyncFiles(e.fsys, []string{e.p("sub")}); err == nil {
				t.Error("SyncFiles of a directory succeeded")
			}
		})
	}
}

// hideSyncFiles hides an FS's own SyncFiles, so vfs.SyncFiles falls back
// to an fsync per file.
type hideSyncFiles struct{ vfs.FS }
