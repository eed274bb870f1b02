package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentcapsule/capsule/node/store"
	"io/fs"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// The inventory a source sends is every file of the frozen capsule by
// content: manifest.json itself, each layout file the manifest lists, and
// each blob the workspace snapshot references. The journal travels as
// lines, not as a blob. A target rebuilds the capsule from its CAS store
// and its journal copy alone.

// inventoryLocked lists the committed capsule and remembers where each
// blob's bytes are, for pushing.
func (a *tenant) inventoryLocked(mr *moveRun) (transfer.Inventory, error) {
	capDir := a.capsule()
	mb, err := vfs.ReadFile(a.n.fsys, filepath.Join(capDir, manifest.FileName))
	if err != nil {
		return transfer.Inventory{}, fmt.Errorf("inventory: %w", err)
	}
	m, err := manifest.Parse(mb)
	if err != nil {
		return transfer.Inventory{}, fmt.Errorf("inventory: %w", err)
	}
	md := digest.FromBytes(mb)
	sum := a.log.Summary()
	inv := transfer.Inventory{Manifest: md, Journal: posOfSummary(sum)}
	src := blobSources{paths: map[digest.Digest]string{}}
	src.add(&inv, md, int64(len(mb)), filepath.Join(capDir, manifest.FileName))
	for _, f := range m.Files {
		src.add(&inv, f.Digest, f.Size, filepath.Join(capDir, filepath.FromSlash(f.Path)))
	}
	blobs, err := snapshotBlobs(a.n.fsys, filepath.Join(capDir, filepath.FromSlash(manifest.SnapshotPath)))
	if err != nil {
		return transfer.Inventory{}, err
	}
	atts, err := a.journalAttachments()
	if err != nil {
		return transfer.Inventory{}, err
	}
	for _, b := range append(blobs, atts...) {
		src.add(&inv, b.Digest, b.Size, filepath.Join(capDir, filepath.FromSlash(manifest.BlobsDir), b.Digest.Hex()))
	}
	mr.setSources(src, inv.Manifest, sum.Bytes, inv.Journal)
	return inv, nil
}

// snapshotBlobs returns the blobs a snapshot.json references, sorted.
func snapshotBlobs(fsys vfs.FS, path string) ([]transfer.Blob, error) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	s, err := capsule.ParseSnapshot(b)
	if err != nil {
		return nil, err
	}
	return sortedBlobs(s), nil
}

func sortBlobs(bs []transfer.Blob) {
	sort.Slice(bs, func(i, j int) bool { return bs[i].Digest < bs[j].Digest })
}

func (a *tenant) staging(move string, elem ...string) string {
	return a.path(append([]string{stagingDir, move}, elem...)...)
}

// inMove is the work of the incoming move being staged: what stage found
// and prepare needs, and the writes not yet durable.
type inMove struct {
	move   string
	source string // the source node
	dir    string // staging/<move>
	m      *manifest.Manifest
	base   *capsule.Snapshot // the workspace staging/<move>/work holds before prepare
	snap   *capsule.Snapshot // the workspace the move brings
	events []journal.Event   // the staged journal, for the render
	// fresh holds the blobs the prepare brought (freshDir, taken into the
	// staging), freshNames their hex names; the batch syncs each and then
	// renames it into the blob folder.
	fresh      string
	freshNames map[string]bool
	attach     []transfer.Blob // blobs the staged journal's attachments name
	batch      store.Batch
	render     *api.RenderReport
	rendered   chan error // the render's outcome, once it is done
	log        *eventLog  // the staged journal, open
}

// startRender renders the staged journal in the background: it is CPU
// work, done while verify and prepare wait for the disk. A render of the
// same journal started ahead (renderAhead) is taken over instead.
func (in *inMove) startRender(ahead *aheadRender, fn renderFunc, now func() time.Time) {
	in.rendered = make(chan error, 1)
	go func() {
		if ahead != nil {
			<-ahead.done
			in.render = ahead.rep
			in.rendered <- ahead.err
			return
		}
		rep, err := renderJournal(in.events, fn, now)
		in.render = rep
		in.rendered <- err
	}()
}

func (in *inMove) capsule() string { return filepath.Join(in.dir, capsuleDir) }

// blobFolder is where the staged blobs are: the staged capsule's blob
// folder, and the fresh blobs the prepare brought until the batch that
// makes them durable renames them in.
func (in *inMove) blobFolder() store.Folder {
	return store.Folder{Dir: in.blobs(), Fresh: in.fresh, Names: in.freshNames}
}
func (in *inMove) blobs() string {
	return filepath.Join(in.capsule(), filepath.FromSlash(manifest.BlobsDir))
}

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
	a.tgt.att = attachIndex{} // the copy is gone: the next one is indexed afresh
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

// verify checks the staged snapshot and its references, and the versions
// the manifest declares for it.
func (in *inMove) verify(fsys vfs.FS, parse func(digest.Digest, []byte) (*capsule.Snapshot, error)) []string {
	sf, ok := in.m.File(manifest.SnapshotPath)
	if !ok {
		return []string{"manifest lists no snapshot"}
	}
	snap, err := readSnapshotFile(fsys, filepath.Join(in.capsule(), filepath.FromSlash(manifest.SnapshotPath)), sf.Digest, parse)
	if err != nil {
		return []string{"snapshot: " + err.Error()}
	}
	in.snap = snap
	var probs []string
	if v := in.m.Schemas[schema.Snapshot]; v != snap.Version {
		probs = append(probs, fmt.Sprintf("snapshot: version %d, the manifest says %d", snap.Version, v))
	}
	present, err := blobNames(fsys, in.blobs())
	if err != nil {
		return []string{"blobs: " + err.Error()}
	}
	for name := range in.freshNames {
		present[name] = true
	}
	for _, b := range in.attach {
		if !present[b.Digest.Hex()] {
			probs = append(probs, fmt.Sprintf("blob %s of a journal attachment is missing", b.Digest.Short()))
		}
	}
	for d, size := range snap.Blobs() {
		if present[d.Hex()] {
			continue
		}
		// Not a regular file under its name: say what is there, if anything.
		fi, err := fsys.Lstat(filepath.Join(in.blobs(), d.Hex()))
		switch {
		case err != nil:
			probs = append(probs, fmt.Sprintf("blob %s of the snapshot is missing", d.Short()))
		default:
			probs = append(probs, fmt.Sprintf("blob %s is a %s, not a file of %d bytes", d.Short(), fi.Mode().Type(), size))
		}
	}
	sort.Strings(probs)
	return probs
}

// snapMemo is the snapshot.json this node parsed last for the agent: an
// incoming move parses the frozen snapshot once, to rebuild the offer's
// inventory, and its verify finds it here instead of parsing it again
// inside the frozen window.
type snapMemo struct {
	d digest.Digest
	s *capsule.Snapshot // never changed once parsed
}

// parseSnapshot parses b, which the caller checked hashes to d, or
// returns the snapshot it parsed last for d, or the one parseAhead is
// parsing. Caller holds a.mu.
func (a *tenant) parseSnapshot(d digest.Digest, b []byte) (*capsule.Snapshot, error) {
	if a.tgt.snaps.s != nil && a.tgt.snaps.d == d {
		return a.tgt.snaps.s, nil
	}
	s, err := a.tgt.snapPre.parsed(d)
	if s == nil {
		s, err = capsule.ParseSnapshot(b)
	}
	if err == nil {
		a.tgt.snaps = snapMemo{d: d, s: s}
	}
	return s, err
}

// snapAhead is a snapshot.json being parsed in the background: a push
// that brings one (as a delta frame, ahead of its offer's message) starts
// parsing it while the rest of the stream is stored.
type snapAhead struct {
	mu   sync.Mutex
	d    digest.Digest
	done chan struct{}
	s    *capsule.Snapshot
	err  error
}

// start parses data, which hashes to d, in the background, replacing any
// earlier parse ahead.
func (p *snapAhead) start(d digest.Digest, data []byte) {
	done := make(chan struct{})
	p.mu.Lock()
	p.d, p.done, p.s, p.err = d, done, nil, nil
	p.mu.Unlock()
	go func() {
		s, err := capsule.ParseSnapshot(data)
		p.mu.Lock()
		if p.done == done {
			p.s, p.err = s, err
		}
		p.mu.Unlock()
		close(done)
	}()
}

// parsed waits for the parse ahead of d and returns it, or nil and no
// error when none was started for d.
func (p *snapAhead) parsed(d digest.Digest) (*capsule.Snapshot, error) {
	p.mu.Lock()
	done, same := p.done, p.d == d
	p.mu.Unlock()
	if done == nil || !same {
		return nil, nil
	}
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.d != d {
		return nil, nil
	}
	return p.s, p.err
}

// blobNames lists the regular files of a blob folder by name, with one
// directory read instead of a stat per blob. Every name in the folder was
// given to bytes that hashed to it (the CAS store verifies as it writes,
// and renames only after the bytes are durable), so a present name is a
// present blob of the size its digest commits to.
func blobNames(fsys vfs.FS, dir string) (map[string]bool, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names[e.Name()] = true
		}
	}
	return names, nil
}

// prepare is ActPrepare: it checks this node can run the staged agent
// (every schema version readable, every secret the environment names
// available here, the journal renders for the agent's current model),
// brings the staged workspace from the shadow's state to the move's (only
// the files that differ), and makes the whole staging durable in one
// batch of concurrent syncs: PREPARED, which the Target persists next,
// may only follow a durable staging (docs/PROTOCOL.md §5).
func (a *tenant) prepare(act transfer.Action) []string {
	in := a.tgt.in
	if in == nil || in.move != act.Move || in.snap == nil || in.rendered == nil {
		return []string{"prepare: the move's staging is not verified"}
	}
	var probs []string
	for _, k := range schema.Kinds {
		if v, ok := in.m.Schemas[k]; ok && !schema.CanRead(k, v) {
			probs = append(probs, fmt.Sprintf("schema %s version %d is not readable by release %s", k, v, schema.Release))
		}
	}
	probs = append(probs, a.secretProblems(in.capsule())...)
	if len(probs) > 0 {
		return probs
	}
	opened := make(chan error, 1)
	go func() {
		var err error
		if in.log == nil { // the journal copy is normally staged open
			in.log, err = openEventLog(a.n.fsys, filepath.Join(in.capsule(), filepath.FromSlash(manifest.JournalPath)), string(a.n.id), act.Epoch, in.m.Journal.Bytes)
		}
		opened <- err
	}()
	err := store.Checkout(a.n.fsys, in.blobFolder(), filepath.Join(in.dir, workDir), in.base, in.snap, &in.batch)
	if err == nil {
		err = a.noteMeta(in, !act.Stopped)
	}
	if err == nil {
		err = in.batch.Flush(a.n.fsys)
	}
	rerr, oerr := <-in.rendered, <-opened
	switch {
	case err != nil:
		return []string{"staging: " + err.Error()}
	case rerr != nil:
		return []string{rerr.Error()}
	case oerr != nil:
		return []string{"journal: " + oerr.Error()}
	}
	return nil
}

// closeLog closes the staged journal opened by prepare, if any.
func (in *inMove) closeLog() {
	if in != nil && in.log != nil {
		_ = in.log.Close()
		in.log = nil
	}
}

// noteMeta writes agent.json, if it changes, with the staging: its name,
// and whether the operator wants it running once the move activates (run,
// the intent the prepare carried). It grants nothing by itself: only a
// holder record lets a node run an agent.
func (a *tenant) noteMeta(in *inMove, run bool) error {
	meta := agentMeta{Name: in.m.Agent.Name, Run: run}
	if meta == a.meta && exists(a.n.fsys, a.path(agentMetaFile)) {
		return nil
	}
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	if err := in.batch.WriteAtomic(a.n.fsys, a.path(agentMetaFile), append(b, '\n'), 0o600); err != nil {
		return err
	}
	a.meta = meta
	return nil
}

// secretProblems names the secrets the staged environment needs that this
// node lacks. Only names appear: values are never read into a message.
func (a *tenant) secretProblems(dir string) []string {
	b, err := vfs.ReadFile(a.n.fsys, filepath.Join(dir, filepath.FromSlash(manifest.EnvironmentPath)))
	if err != nil {
		return []string{"environment: " + err.Error()}
	}
	spec, err := envspec.Parse(b)
	if err != nil {
		return []string{"environment: " + err.Error()}
	}
	names := append([]string(nil), spec.Secrets...)
	for _, t := range spec.Tools {
		names = append(names, t.Secrets...)
	}
	if missing := a.n.secrets.Missing(names); len(missing) > 0 {
		return []string{(&MissingSecretsError{Names: missing}).Error()}
	}
	return nil
}

// promote is ActStart (the HOLDER record is already durable): the staged
// capsule and workspace become the live ones, the journal records the move
// and the new epoch, and the runner starts. The manifest is committed with
// this node as holder right after the reply (commitHolderSoon): the holder
// record, not the manifest, is what lets a node run the agent, and the
// journal events are durable before the runner starts.
func (a *tenant) promote(act transfer.Action) error {
	fsys := a.n.fsys
	for _, name := range []string{capsuleDir, workDir} {
		src := a.staging(act.Move, name)
		if !exists(fsys, src) {
			continue // promoted before a crash; the live copy is in place
		}
		if err := fsys.RemoveAll(a.path(name)); err != nil {
			return err
		}
		if err := fsys.Rename(src, a.path(name)); err != nil {
			return err
		}
	}
	// The renames become durable while the move is journaled (the two
	// syncs overlap); the agent starts only once both are done, and the
	// staging's leftovers go only after the renames are durable.
	synced := make(chan error, 1)
	go func() { synced <- fsys.SyncDir(a.dir) }()
	renamed := func() error {
		if err := <-synced; err != nil {
			return err
		}
		_ = fsys.RemoveAll(a.staging(act.Move))
		return nil
	}
	a.dropIncoming()
	a.cache.Forget()
	a.attach = attachIndex{} // a new journal file: indexed afresh
	source := ""
	var staged *eventLog
	var snap *capsule.Snapshot
	if a.tgt.in != nil && a.tgt.in.move == act.Move {
		source, staged, snap = a.tgt.in.source, a.tgt.in.log, a.tgt.in.snap
		a.tgt.in.log = nil
	}
	a.tgt.in.closeLog()
	a.tgt.in = nil
	if m, err := readManifestFile(fsys, a.capsule()); err == nil && a.meta.Name != m.Agent.Name {
		a.meta.Name = m.Agent.Name
	}
	if err := a.saveMetaIfChanged(); err != nil {
		return errors.Join(err, renamed())
	}
	if a.log != nil {
		_ = a.log.Close()
	}
	a.log = staged // the journal file moved with its folder; the open file is the same
	return a.startAfterMove(act, source, snap, renamed)
}

// saveMetaIfChanged writes agent.json unless it already says a.meta.
func (a *tenant) saveMetaIfChanged() error {
	var disk agentMeta
	if b, err := vfs.ReadFile(a.n.fsys, a.path(agentMetaFile)); err == nil && json.Unmarshal(b, &disk) == nil && disk == a.meta {
		return nil
	}
	return a.saveMeta()
}

func (a *tenant) startAfterMove(act transfer.Action, source string, snap *capsule.Snapshot, renamed func() error) error {
	if source == "" {
		source = a.lastMoveSource()
	}
	if _, ok := a.mayRun(); !ok {
		return errors.Join(fmt.Errorf("%w: %s (%s)", ErrNotHeld, a.id, a.why()), renamed())
	}
	if err := a.openLog(act.Epoch); err != nil {
		return errors.Join(err, renamed())
	}
	// The move and the new epoch are journaled together: one fsync.
	kinds := []journal.Kind{journal.KindMoved, journal.KindEpoch}
	bodies := []any{journal.Moved{From: source, To: string(a.n.id), Epoch: act.Epoch}, journal.EpochStart{Epoch: act.Epoch, Holder: string(a.n.id)}}
	err := a.log.AppendAll(act.Epoch, a.n.wallTime(), kinds, bodies)
	if err = errors.Join(err, renamed()); err != nil {
		return err
	}
	started := a.n.clock.Now() // before the runner touches the workspace
	if !a.meta.Run {
		a.n.log.Info("agent stays stopped: the operator stopped it", "agent", a.id, "epoch", act.Epoch)
	} else if err := a.runLocked(); err != nil {
		return err
	}
	a.afterMove(act.Epoch, snap, started)
	return nil
}

// afterMove, once the request that activated the move has been answered,
// commits the manifest naming this node as holder at epoch and teaches
// the stat cache the workspace it materialized (snap, when known), so the
// next record hashes only what the agent changes. started is when the
// runner started: a file it has changed since has a newer time, which the
// cache never trusts for an entry recorded at started.
func (a *tenant) afterMove(epoch uint64, snap *capsule.Snapshot, started time.Time) {
	a.n.wg.Add(1)
	go func() {
		defer a.n.wg.Done()
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.log == nil || a.holder.Holder() != epoch || ctxDone(a.n.ctx) {
			return
		}
		if err := a.commitHolderLocked(); err != nil {
			a.n.log.Warn("commit after move", "agent", a.id, "err", err)
		} else if err := a.pruneBlobsLocked(); err != nil {
			a.n.log.Warn("prune after move", "agent", a.id, "err", err)
		}
		if snap != nil {
			if racy := a.seedCache(snap, started); len(racy) > 0 {
				a.n.wg.Add(1)
				go a.rehashLater(a.work(), racy, started)
			}
		}
	}()
}

// pruneBlobsLocked removes from the capsule's blob folder the blobs that
// neither its snapshot nor an attachment of its journal references. A
// move's staging takes the whole CAS store, which holds blobs of earlier
// pre-copies and holds, so without this the blob folder would grow with
// every move (and verify warn about each such blob). A move out of this
// node lists only referenced blobs, and takes a.mu to do so, so none is
// pruned under it. Caller holds a.mu.
func (a *tenant) pruneBlobsLocked() error {
	atts, err := a.journalAttachments()
	if err != nil {
		return err
	}
	keep := make(map[digest.Digest]bool, len(atts))
	for _, b := range atts {
		keep[b.Digest] = true
	}
	c, err := capsule.Open(a.n.fsys, a.capsule(), capsule.Config{Writer: a.n.writer()})
	if err != nil {
		return err
	}
	n, bytes, err := c.PruneBlobs(func(d digest.Digest) bool { return keep[d] })
	if n > 0 {
		a.n.log.Debug("unreferenced blobs pruned", "agent", a.id, "blobs", n, "bytes", bytes)
	}
	return err
}

// seedCache records in the stat cache the digests of the workspace files
// a checkout of snap wrote, as known at time at (store.StatCache.Seed). It
// returns the files the cache will not trust for that.
func (a *tenant) seedCache(snap *capsule.Snapshot, at time.Time) []store.WalkedFile {
	return a.cache.Seed(a.n.fsys, a.work(), snap, at)
}

// rehashLater hashes again, once store.RacyWindow has passed since at, the
// seeded files the stat cache could not trust, so that the next freeze
// finds them cached instead of hashing them inside the frozen window. It
// runs beside the agent, as a pre-copy record does: a file the agent
// changes meanwhile gets a newer stat, which its entry does not match.
func (a *tenant) rehashLater(dir string, files []store.WalkedFile, at time.Time) {
	defer a.n.wg.Done()
	if wait := at.Add(store.RacyWindow + 10*time.Millisecond).Sub(a.n.clock.Now()); wait > 0 {
		select {
		case <-a.n.clock.After(wait):
		case <-a.n.ctx.Done():
			return
		}
	}
	store.Rehash(a.n.fsys, dir, files, &a.cache, a.n.clock.Now, func() bool { return ctxDone(a.n.ctx) })
}

// lastMoveSource returns the source node of an incoming move: the machine
// of the journal's last event (read only when the move's bookkeeping was
// lost to a restart).
func (a *tenant) lastMoveSource() string {
	events, _, err := readJournal(a.n.fsys, filepath.Join(a.capsule(), journalInCap))
	if err != nil || len(events) == 0 {
		return ""
	}
	return events[len(events)-1].Machine
}

// discard is ActDiscard: the move's staging goes away; its blobs go back
// into the CAS store and its journal back to the journal copy, so a later
// attempt does not send them again. The shadow it was built from is gone.
func (a *tenant) discard(move string) error {
	if a.tgt.in != nil && a.tgt.in.move == move {
		a.tgt.in.closeLog()
		a.tgt.in = nil
	}
	dir := a.staging(move)
	if !exists(a.n.fsys, dir) {
		return nil
	}
	if err := a.reclaim(a.staging(move, capsuleDir), -1); err != nil {
		return err
	}
	if err := a.n.fsys.RemoveAll(dir); err != nil {
		return err
	}
	return a.n.fsys.SyncDir(a.path(stagingDir))
}

// toCache turns the retired capsule folder into cache: blobs into the CAS
// store, the journal into the journal copy, and the workspace, when fw
// says what it holds, into the shadow of a later move back (keepShadow);
// the rest is removed.
func (a *tenant) toCache(events int64, fw *frozenWork) error {
	a.cache.Forget()
	a.attach = attachIndex{}
	_ = a.n.fsys.Remove(a.path(statCacheFile)) // it described the workspace that leaves
	if err := a.reclaim(a.capsule(), events); err != nil {
		return err
	}
	if fw != nil && exists(a.n.fsys, a.work()) {
		if err := a.keepShadow(fw); err != nil {
			a.n.log.Warn("retire: workspace not kept as shadow", "agent", a.id, "err", err)
			a.dropShadow()
		}
	}
	for _, name := range []string{capsuleDir, workDir} {
		if err := a.n.fsys.RemoveAll(a.path(name)); err != nil {
			return err
		}
	}
	return a.n.fsys.SyncDir(a.dir)
}

// reclaim moves the blobs of a capsule folder into the CAS store (the
// whole folder by one rename when the store is empty) and its journal to
// the journal copy (when it has at least as many events; events is the
// capsule journal's count, or -1 to count them).
func (a *tenant) reclaim(capDir string, events int64) error {
	fsys, c := a.n.fsys, a.cas()
	bdir := filepath.Join(capDir, filepath.FromSlash(manifest.BlobsDir))
	if exists(fsys, bdir) && !exists(fsys, c.Dir) {
		if err := vfs.MkdirAllDurable(fsys, a.dir, 0o700); err != nil {
			return err
		}
		if err := fsys.Rename(bdir, c.Dir); err != nil {
			return err
		}
		if err := fsys.SyncDir(a.dir); err != nil {
			return err
		}
	} else if err := a.reclaimBlobs(bdir); err != nil {
		return err
	}
	jpath := filepath.Join(capDir, filepath.FromSlash(manifest.JournalPath))
	if events < 0 && exists(fsys, jpath) {
		events = int64(journalCount(fsys, jpath))
	}
	if exists(fsys, jpath) && a.incomingCount() <= uint64(events) {
		a.dropIncoming()
		if err := fsys.Rename(jpath, a.path(incomingFile)); err != nil {
			return err
		}
		return fsys.SyncDir(a.dir)
	}
	return nil
}

// reclaimBlobs moves the blobs of bdir the CAS store lacks into it.
func (a *tenant) reclaimBlobs(bdir string) error {
	fsys, c := a.n.fsys, a.cas()
	ents, err := fsys.ReadDir(bdir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(ents) > 0 {
		if err := vfs.MkdirAllDurable(fsys, c.Dir, 0o700); err != nil {
			return err
		}
	}
	for _, e := range ents {
		d, err := digest.FromHex(e.Name())
		if err != nil || exists(fsys, c.Path(d)) {
			continue
		}
		if err := fsys.Rename(filepath.Join(bdir, e.Name()), c.Path(d)); err != nil {
			return err
		}
	}
	return c.Sync()
}

func readManifestFile(fsys vfs.FS, capDir string) (*manifest.Manifest, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(capDir, manifest.FileName))
	if err != nil {
		return nil, err
	}
	return manifest.Parse(b)
}

func journalCount(fsys vfs.FS, path string) uint64 {
	events, _, err := readJournal(fsys, path)
	if err != nil {
		return 0
	}
	return uint64(len(events))
}
