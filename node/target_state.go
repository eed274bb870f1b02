package node

import (
	"fmt"
	"github.com/agentcapsule/capsule/compat"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// targetSide is the target side of a move of the agent into this node and
// the caches of what earlier moves brought (incoming.go, staging.go,
// shadow.go, target.go). Guarded by tenant.mu.
type targetSide struct {
	inc     *incomingLog         // the journal copy, in memory
	in      *inMove              // the incoming move being staged
	shadow  *shadowMem           // shadow.json and its snapshot, in memory
	ahead   *aheadRender         // the journal copy's render, started ahead of the prepare
	snaps   snapMemo             // the snapshot.json parsed last
	snapPre snapAhead            // a snapshot.json of a push being parsed in the background (own lock)
	att     agentlog.Attachments // attachments of the journal copy
	// mappings are the tool_mapping events the prepare's compatibility
	// check found, journaled when the agent starts here (compat.go).
	mappings []compat.Append
}

// snapMemo is the snapshot.json this node parsed last for the agent: an
// incoming move parses the frozen snapshot once, to rebuild the offer's
// inventory, and its verify finds it here instead of parsing it again
// inside the frozen window.
type snapMemo struct {
	d digest.Digest
	s *capsule.Snapshot // never changed once parsed
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

// shadowState is shadow.json. V and Release name its schema version and
// writer (from release 0.3.0; a shadow.json without v is version 1,
// written by an older release).
type shadowState struct {
	V        int                      `json:"v,omitempty"`
	Release  string                   `json:"release,omitempty"`
	Manifest digest.Digest            `json:"manifest"`
	Files    map[string]digest.Digest `json:"files"` // layout files in shadow/capsule, by path
}

// shadowMem caches shadow.json and the snapshot it describes.
type shadowMem struct {
	state *shadowState
	snap  *capsule.Snapshot
	blobs map[digest.Digest]bool // what state and snap reference, built on first use
}

// incomingLog is a target's journal copy (incoming.jsonl), kept open so
// that a move never reads or rewrites the whole journal inside the frozen
// window: the file is open in a journal log (durable, chain-checked
// imports of the tails a source sends; its summary is the count, heads and
// digest a manifest commits), and its events are decoded in memory for the
// render. It is opened once, outside the window (at the first pre-copy
// round), and kept up to date by every import. When a move stages the
// journal, the open log goes with the file and becomes the agent's
// journal when the move activates.
type incomingLog struct {
	log    *agentlog.Log
	events []journal.Event
}

func (l *incomingLog) pos() transfer.JournalPos { return agentlog.PosOf(l.events) }

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
	rendered   chan error    // the render's outcome, once it is done
	log        *agentlog.Log // the staged journal, open
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

// closeLog closes the staged journal opened by prepare, if any.
func (in *inMove) closeLog() {
	if in != nil && in.log != nil {
		_ = in.log.Close()
		in.log = nil
	}
}

// aheadRender is a render of the journal copy started ahead of the
// prepare that needs it.
type aheadRender struct {
	key  journalKey
	done chan struct{} // closed when rep and err are set
	rep  *api.RenderReport
	err  error
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

// readSnapshotFile reads the snapshot.json at name, checks it hashes to
// want and parses it with parse (capsule.ParseSnapshot when nil).
func readSnapshotFile(fsys vfs.FS, name string, want digest.Digest, parse func(digest.Digest, []byte) (*capsule.Snapshot, error)) (*capsule.Snapshot, error) {
	b, err := vfs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	if digest.FromBytes(b) != want {
		return nil, fmt.Errorf("%s does not hash to %s", name, want.Short())
	}
	if parse == nil {
		return capsule.ParseSnapshot(b)
	}
	return parse(want, b)
}
