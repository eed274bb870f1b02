package capsule

import (
	"fmt"
	"io/fs"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// VerifyJournal checks the journal of the capsule folder dir against its
// manifest, and nothing else, exactly as Verify does: the manifest's
// structure and versions, then the committed prefix by size, digest and
// final newline (FORMAT §7.7), and the tail by opts.JournalTail. A node
// runs it before it appends to a capsule's journal, so that it never
// commits a manifest over a journal whose committed part was changed. The
// report's manifest is returned when it parsed. The error is non-nil only
// when dir cannot be read at all.
func VerifyJournal(fsys vfs.FS, dir string, opts VerifyOptions) (*Report, *manifest.Manifest, error) {
	fi, err := fsys.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("verify journal: %w", err)
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("verify journal: %s is not a directory", dir)
	}
	v := &verifier{view: newView(fsys, dir), opts: opts, present: map[string]fs.FileMode{}, missing: map[string]bool{}}
	v.readManifest()
	if v.m == nil {
		return v.report(), nil, nil
	}
	if j, ok := v.job(manifest.JournalPath, v.checkJournal); ok {
		j.run(j, newLockedProgress(opts.Progress))
	} else if _, err := fsys.Lstat(v.file(manifest.JournalPath)); err != nil {
		v.problem(manifest.JournalPath, KindMissing, "layout file missing")
	}
	return v.report(), v.m, nil
}
