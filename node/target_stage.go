package node

import (
	"fmt"
	"path/filepath"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// The inventory a source sends is every file of the frozen capsule by
// content: manifest.json itself, each layout file the manifest lists, and
// each blob the workspace snapshot references. The journal travels as
// lines, not as a blob. A target rebuilds the capsule from its CAS store
// and its journal copy alone.

// stage is ActVerify: it builds the move's capsule in staging and verifies
// what is new since pre-copy. The staging starts as the shadow (the
// layout files and workspace of the last pre-copy round), the CAS store
// becomes its blob folder and the journal copy its journal, each by one
// rename; only layout files that changed are copied. Every blob was
// verified against its digest as it arrived (the CAS store refuses bytes
// that do not hash to their name), so what remains to check is the
// manifest (digest, agent, versions), every layout file (copied with
// verification, or kept from the shadow, which was), every reference of
// the snapshot (present with its size), and the journal: its tail was
// checked by chain as it arrived, and its count, heads and digest (kept
// running as it arrived) must be the manifest's. It returns the problems
// found (none: verified).
func (a *tenant) stage(act transfer.Action) []string {
	in, err := a.buildStaging(act)
	if err != nil {
		return []string{err.Error()}
	}
	a.tgt.in = in
	return in.verify(a.n.fsys, a.parseSnapshot)
}

func (a *tenant) buildStaging(act transfer.Action) (*inMove, error) {
	fsys := a.n.fsys
	if err := a.discard(act.Move); err != nil { // a retried verify starts afresh
		return nil, err
	}
	mb, m, err := a.casManifest("", act.Manifest)
	if err != nil && exists(fsys, a.path(freshDir, act.Manifest.Hex())) {
		mb, m, err = a.casManifest(a.path(freshDir), act.Manifest) // it came with the prepare
	}
	if err != nil {
		return nil, err
	}
	in := &inMove{move: act.Move, dir: a.staging(act.Move), m: m}
	if p := a.holder.Pending(); p != nil && p.Move == act.Move {
		in.source = p.Source
	}
	if err := vfs.MkdirAllDurable(fsys, a.path(stagingDir), 0o700); err != nil {
		return nil, err
	}
	if err := a.takeShadow(in); err != nil {
		return nil, err
	}
	if err := a.stageBlobs(in); err != nil {
		return nil, err
	}
	if err := a.stageFresh(in); err != nil {
		return nil, err
	}
	st := map[string]digest.Digest{}
	if a.tgt.shadow != nil {
		st = a.tgt.shadow.state.Files
	}
	a.tgt.shadow = nil
	if err := store.PlaceLayout(fsys, in.blobFolder(), in.capsule(), m, st, &in.batch); err != nil {
		return nil, err
	}
	if err := a.stageJournal(in, act.Journal); err != nil {
		return nil, err
	}
	in.startRender(a.takeAhead(keyOfLog(in.log)), a.n.hooks.render, a.n.clock.Now)
	mpath := filepath.Join(in.capsule(), manifest.FileName)
	replaced, err := store.WriteOver(fsys, mpath, mb, 0o644) // over the shadow's, when it has one
	if err != nil {
		return nil, err
	}
	in.batch.File(mpath)
	if !replaced {
		in.batch.Created(mpath)
	}
	return in, nil
}

// takeShadow makes the shadow the move's staging (one rename), or creates
// an empty staging when there is none.
func (a *tenant) takeShadow(in *inMove) error {
	fsys := a.n.fsys
	st, base := a.loadShadow()
	in.base = base
	in.batch.Created(in.dir)
	if st != nil {
		if err := fsys.Rename(a.path(shadowDir), in.dir); err != nil {
			return err
		}
		a.n.shadowsTaken.Add(1)
		in.batch.Dir(a.dir)
		if err := fsys.Remove(a.path(shadowFile)); err != nil {
			return err
		}
		return nil
	}
	in.base = capsule.NewSnapshot()
	for _, d := range append([]string{in.dir, filepath.Join(in.dir, workDir), in.capsule()}, store.HostPaths(in.capsule(), shadowSkeleton)...) {
		if err := store.MkdirNoted(fsys, d, &in.batch); err != nil {
			return err
		}
	}
	return nil
}

// stageBlobs makes the CAS store the staged capsule's blob folder.
func (a *tenant) stageBlobs(in *inMove) error {
	fsys, dst := a.n.fsys, in.blobs()
	in.batch.Dir(dst) // entries of blobs that came with the prepare
	in.batch.Created(dst)
	if !exists(fsys, a.cas().Dir) {
		return fsys.Mkdir(dst, 0o755)
	}
	in.batch.Dir(a.dir)
	return fsys.Rename(a.cas().Dir, dst)
}

// stageFresh takes the blobs the prepare brought (freshDir) into the
// staging (one rename) and notes each for the batch: synced, then renamed
// into the blob folder, so the folder never names bytes a crash could
// tear. Until the flush they are read from the fresh folder.
func (a *tenant) stageFresh(in *inMove) error {
	fsys := a.n.fsys
	src := a.path(freshDir)
	if !exists(fsys, src) {
		return nil
	}
	in.fresh = filepath.Join(in.dir, freshDir)
	if err := fsys.Rename(src, in.fresh); err != nil {
		return err
	}
	in.batch.Dir(a.dir)
	// Neither the fresh folder's new place nor its entries are synced:
	// each blob in it is synced and renamed into the staged blob folder,
	// which is, and the staging is removed whole if the move does not
	// complete (and fresh/ when a node starts).
	names, err := blobNames(fsys, in.fresh)
	if err != nil {
		return err
	}
	in.freshNames = names
	for name := range names {
		in.batch.RenameAfterSync(filepath.Join(in.fresh, name), filepath.Join(in.blobs(), name))
	}
	return nil
}

// stageJournal makes the journal copy the staged journal (one rename; its
// open log goes with it), after checking it ends at want and is the
// journal the manifest commits: same count, heads and digest (the digest
// was kept running as the copy grew, so nothing is hashed again).
func (a *tenant) stageJournal(in *inMove, want transfer.JournalPos) error {
	l, err := a.incoming()
	if err != nil {
		return err
	}
	if have := uint64(len(l.events)); have > want.Count && want.Count > 0 && l.events[want.Count-1].ID == want.Head {
		if l, err = a.truncateIncoming(want.Count); err != nil {
			return err
		}
	}
	if got := l.pos(); got != want {
		return fmt.Errorf("journal: this node has %d events ending at %s, the move needs %d ending at %s", got.Count, got.Head, want.Count, want.Head)
	}
	if got, wantJ := manifestJournal(l.log.Summary()), in.m.Journal; !sameJournal(got, wantJ) {
		return fmt.Errorf("journal: %d events, %d bytes, digest %s: the manifest commits %d events, %d bytes, digest %s",
			got.Events, got.Bytes, got.Digest.Short(), wantJ.Events, wantJ.Bytes, wantJ.Digest.Short())
	}
	if in.attach, err = a.incomingAttachments(len(l.events)); err != nil {
		return err
	}
	dst := filepath.Join(in.capsule(), filepath.FromSlash(manifest.JournalPath))
	if err := a.n.fsys.Rename(a.path(incomingFile), dst); err != nil {
		return err
	}
	a.tgt.att = agentlog.Attachments{} // the copy is gone: the next one is indexed afresh
	in.batch.Dir(a.dir)
	in.batch.Created(dst)
	in.events, in.log = l.events, l.log
	a.tgt.inc = nil // the log now belongs to the staging
	return nil
}

func sameJournal(a, b manifest.Journal) bool {
	if a.Events != b.Events || a.Bytes != b.Bytes || a.Digest != b.Digest || len(a.Heads) != len(b.Heads) {
		return false
	}
	for m, h := range a.Heads {
		if b.Heads[m] != h {
			return false
		}
	}
	return true
}
