package agentlog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/journal/logfile"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// OpenChecked opens the journal of the capsule in capDir for machine,
// fenced at holder, after checking it against the capsule's manifest in
// the same streaming pass that loads it (memory does not grow with the
// journal's length). It checks what capsule.VerifyJournal checks: the
// manifest reads and names versions this release reads (capsule.Open,
// which also completes or rolls back an interrupted commit), the journal
// file is there, its committed prefix has the recorded size, digest and
// final newline and the recorded heads (logfile.Config.Expect), and every
// committed line that names attachments decodes with valid blob digests
// (FORMAT §3.2, §7.7). The uncommitted tail is checked by chain and a torn
// last line set aside, as logfile.Open does.
func OpenChecked(fsys vfs.FS, capDir, machine string, holder uint64) (*Log, error) {
	c, err := capsule.Open(fsys, capDir, capsule.Config{})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(capDir, filepath.FromSlash(manifest.JournalPath))
	if _, err := fsys.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %s: layout file missing", capDir, manifest.JournalPath)
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", capDir, err)
	}
	want := FromManifest(c.Manifest().Journal)
	var bad error
	visit := func(e *journal.Event, line int) {
		if bad == nil && int64(line) <= want.Events {
			bad = checkAttachments(e, line)
		}
	}
	l, err := logfile.Open(logfile.Config{FS: fsys, Path: path, Epoch: holder, Expect: &want, Visit: visit})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", capDir, err)
	}
	if bad != nil {
		_ = l.Close()
		return nil, fmt.Errorf("%s: %s: %w", capDir, manifest.JournalPath, bad)
	}
	return &Log{l: l, machine: machine}, nil
}

// checkAttachments checks that the attachments event e (on line) names
// decode and name blobs by valid digests.
func checkAttachments(e *journal.Event, line int) error {
	as, err := journal.Attachments(*e)
	if err != nil {
		return fmt.Errorf("line %d names attachments but does not decode: %w", line, err)
	}
	for _, a := range as {
		if _, err := digest.Parse(a.Blob); err != nil {
			return fmt.Errorf("line %d: attachment blob %q: %w", line, a.Blob, err)
		}
	}
	return nil
}

// FromManifest returns the manifest's record of the committed journal as a
// journal.Summary.
func FromManifest(committed manifest.Journal) journal.Summary {
	sum := journal.Summary{Events: committed.Events, Bytes: committed.Bytes, Digest: committed.Digest, Heads: map[string]journal.Head{}}
	for m, h := range committed.Heads {
		sum.Heads[m] = journal.Head{Seq: h.Seq, ID: h.ID, Clock: h.Clock, Epoch: h.Epoch}
	}
	return sum
}
