package capsule

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// view resolves the files of a capsule folder without changing it. After a
// crash past a commit's commit point, the committed state is the pending
// manifest with the staged files that have not been moved yet (FORMAT §4.3);
// a view reads that state, so Verify and Inspect need not write.
type view struct {
	fsys    vfs.FS
	dir     string
	pending bool // PendingDir/manifest.json exists
	aborted bool // PendingDir exists without a manifest
}

func newView(fsys vfs.FS, dir string) *view {
	v := &view{fsys: fsys, dir: dir}
	if _, err := fsys.Lstat(hostPath(dir, PendingDir)); err == nil {
		_, err := fsys.Lstat(filepath.Join(hostPath(dir, PendingDir), manifest.FileName))
		v.pending = err == nil
		v.aborted = errors.Is(err, fs.ErrNotExist)
	}
	return v
}

// manifestPath is the host path of the manifest of the state being viewed.
func (v *view) manifestPath() string {
	if v.pending {
		return filepath.Join(hostPath(v.dir, PendingDir), manifest.FileName)
	}
	return hostPath(v.dir, manifest.FileName)
}

// isStaged reports whether rel's committed content is still in PendingDir.
func (v *view) isStaged(rel string) bool {
	if !v.pending {
		return false
	}
	_, err := v.fsys.Lstat(filepath.Join(hostPath(v.dir, PendingDir), pendingName(rel)))
	return err == nil
}

// file returns the host path holding rel's committed content.
func (v *view) file(rel string) string {
	if v.isStaged(rel) {
		return filepath.Join(hostPath(v.dir, PendingDir), pendingName(rel))
	}
	return hostPath(v.dir, rel)
}
