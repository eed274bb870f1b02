package node

import (
	"sync"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/transfer"
)

// moveRun is one move this node drives as the source: the driver's
// bookkeeping around a transfer.Source, and what it reports.
type moveRun struct {
	id    string
	to    ID
	epoch uint64

	mu          sync.Mutex
	phase       string
	outcome     transfer.Outcome
	reason      string
	prog        api.MoveProgress
	subs        []func(api.MoveProgress)
	done        chan struct{} // closed at the final outcome
	waiting     chan struct{} // closed when the move first waits for its resolution
	finished    bool
	waited      bool
	frozenAt    time.Time
	runningAt   time.Time // when the target's activated reply arrived
	frozenMS    int64
	cancelled   int // model calls the freeze cancelled
	frozenRT    int
	windowBytes int64
	render      *api.RenderReport // what the target's prepare rendered
	rounds      int
	src         blobSources            // where each inventory blob's bytes are
	marks       map[uint64]journalMark // journal positions of inventories, by event count
	manifest    digest.Digest          // the current inventory's manifest
	phases      []phaseAt              // when each phase began (benchmarks read it)
	inputs      chan transfer.Input    // operator inputs (resolve, force)
	driving     bool
	frozenWork  *frozenWork            // the workspace as the freeze recorded it
	sentSet     map[digest.Digest]bool // blobs sent so far
	skippedSet  map[digest.Digest]bool // blobs the target had before this move sent them
	wire        moveWire               // inventory by manifest and delta frames (delta.go)
	// tgtJournal is where the target's journal copy is known to end (its
	// last want or promise, or the last pre-copy push that reached it).
	tgtJournal      transfer.JournalPos
	tgtJournalKnown bool
	// lastReplies are the replies to the message of the last push.
	lastReplies []api.Message
	// pin is what the version exchange decided (versions.go).
	pin pinning
}

func newMoveRun(id string, to ID, epoch uint64) *moveRun {
	return &moveRun{id: id, to: to, epoch: epoch, phase: api.PhasePrecopy, done: make(chan struct{}), waiting: make(chan struct{}),
		src: blobSources{paths: map[digest.Digest]string{}}, marks: map[uint64]journalMark{}, sentSet: map[digest.Digest]bool{}, skippedSet: map[digest.Digest]bool{}, inputs: make(chan transfer.Input, 4)}
}

func (mr *moveRun) setPhase(p string) {
	mr.mu.Lock()
	mr.phases = append(mr.phases, phaseAt{p, time.Now()})
	mr.phase = p
	mr.prog.Phase = p
	prog, subs := mr.prog, append([]func(api.MoveProgress){}, mr.subs...)
	mr.mu.Unlock()
	for _, f := range subs {
		f(prog)
	}
}

func (mr *moveRun) sent(bytes int64, blobs []transfer.Blob) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	mr.prog.BytesSent += bytes
	if !mr.frozenAt.IsZero() && mr.runningAt.IsZero() {
		mr.windowBytes += bytes
	}
	for _, b := range blobs {
		if !mr.sentSet[b.Digest] {
			mr.sentSet[b.Digest] = true
			mr.prog.BlobsSent++
		}
	}
}

func (mr *moveRun) status() api.MoveStatus {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return api.MoveStatus{MoveID: mr.id, To: string(mr.to), Epoch: mr.epoch, Phase: mr.phase, Outcome: string(mr.outcome), Reason: mr.reason}
}

// noteCancelled records model calls the freeze cancelled, for the report.
func (mr *moveRun) noteCancelled(n int) {
	mr.mu.Lock()
	mr.cancelled += n
	mr.mu.Unlock()
}

func (mr *moveRun) result(agentID string, from ID) api.MoveResult {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return api.MoveResult{Agent: agentID, MoveID: mr.id, From: string(from), To: string(mr.to), Epoch: mr.epoch,
		Outcome: string(mr.outcome), Reason: mr.reason, FrozenMS: mr.frozenMS, BytesSent: mr.prog.BytesSent,
		BlobsSent: mr.prog.BlobsSent, BlobsSkipped: mr.prog.BlobsSkipped, BlobsDelta: mr.wire.deltas, RoundTripsFrozen: mr.frozenRT, PrecopyRounds: mr.rounds,
		WindowBytes: mr.windowBytes, Render: mr.render, CancelledModelCalls: mr.cancelled}
}

// noteWant records, from a want or promise answering an inventory, the
// blobs the target holds (those it did not want, and the delta bases it
// offered) and among them those it had without this move sending them:
// BlobsSkipped.
func (mr *moveRun) noteWant(asked []transfer.Blob, want, bases []digest.Digest) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	wanted := map[digest.Digest]bool{}
	for _, d := range want {
		wanted[d] = true
	}
	for _, b := range asked {
		if wanted[b.Digest] {
			continue
		}
		mr.wire.hold(b.Digest)
		if !mr.sentSet[b.Digest] {
			mr.skippedSet[b.Digest] = true
		}
	}
	for _, d := range bases {
		mr.wire.hold(d)
	}
	mr.prog.BlobsSkipped = len(mr.skippedSet)
}

func (mr *moveRun) markRunningOnTarget(now time.Time) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if !mr.frozenAt.IsZero() && mr.frozenMS == 0 {
		mr.runningAt = now
		mr.frozenMS = max(1, now.Sub(mr.frozenAt).Milliseconds())
	}
}

func phaseOf(t transfer.MsgType) string {
	switch t {
	case transfer.MsgHave:
		return api.PhasePrecopy
	case transfer.MsgOffer:
		return api.PhaseOffer
	case transfer.MsgPrepare:
		return api.PhasePrepare
	case transfer.MsgActivate:
		return api.PhaseActivate
	}
	return api.PhaseResolve
}

// noteTargetJournal records where the target's journal copy ends.
func (mr *moveRun) noteTargetJournal(p transfer.JournalPos) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	mr.tgtJournal, mr.tgtJournalKnown = p, true
}

func (mr *moveRun) targetJournal() (transfer.JournalPos, bool) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return mr.tgtJournal, mr.tgtJournalKnown
}

func (mr *moveRun) takeReplies() []api.Message {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	r := mr.lastReplies
	mr.lastReplies = nil
	return r
}

type phaseAt struct {
	phase string
	at    time.Time
}

// journalMark is where an inventory's journal position ends in the
// source's journal file.
type journalMark struct {
	bytes int64
	head  string
}

// setSources records where the current inventory's blobs are, and where
// its journal position ends in the journal file.
func (mr *moveRun) setSources(src blobSources, manifest digest.Digest, journalBytes int64, pos transfer.JournalPos) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	mr.src = src
	mr.manifest = manifest
	mr.marks[pos.Count] = journalMark{bytes: journalBytes, head: pos.Head}
}

// mark returns the byte offset of journal position p, if an inventory of
// this move recorded it.
func (mr *moveRun) mark(p transfer.JournalPos) (int64, bool) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if p.Count == 0 {
		return 0, true
	}
	m, ok := mr.marks[p.Count]
	return m.bytes, ok && m.head == p.Head
}

// sourceSide is the source side of this node's latest move of the agent
// (move.go, record.go, delta.go). Guarded by tenant.mu.
type sourceSide struct {
	machine *transfer.Source // the latest move's state machine (source.json), or nil
	move    *moveRun         // the latest move this node started, or nil
}

// frozenWork is the workspace of a frozen agent as its freeze recorded
// it: the runner is stopped, so the workspace holds exactly snap until the
// move ends.
type frozenWork struct {
	manifest  digest.Digest // the frozen inventory's manifest
	snapBytes []byte        // snapshot.json of that manifest
	snap      *capsule.Snapshot
}

// blobSources says where the bytes of each inventory blob come from.
type blobSources struct {
	mem   map[digest.Digest][]byte
	paths map[digest.Digest]string
}

// add lists a blob in inv once, reading it from path unless it is in mem.
func (s blobSources) add(inv *transfer.Inventory, d digest.Digest, size int64, path string) {
	if _, ok := s.paths[d]; ok {
		return
	}
	inv.Blobs = append(inv.Blobs, transfer.Blob{Digest: d, Size: size})
	s.paths[d] = path
}

// moveWire is what a move (source side) knows to keep its messages small:
// the current inventory's manifest and snapshot.json, and which blobs the
// target holds. Guarded by the moveRun's mu.
type moveWire struct {
	heads   []transfer.Blob // the current inventory's manifest and snapshot.json
	invLen  int             // blobs in that inventory
	kinds   map[digest.Digest]baseKind
	atPeer  map[digest.Digest]bool // blobs the target holds, as far as this move knows
	refused map[digest.Digest]bool // bases a failed push used: not used again
	deltas  int                    // delta frames the target stored
	files   int                    // of which workspace files
	byMan   int                    // requests sent with their inventory by manifest
	// paths names the workspace path of each file blob of the current
	// inventory, and versions the blobs each path had in this move's
	// inventories, oldest first: a file that changed between rounds
	// travels as a delta of the version the target already has.
	paths    map[digest.Digest]string
	versions map[string][]digest.Digest
}

// wireMessage is a request as it travels: its inventory may be marked as
// the manifest's (api.InventoryManifest), with the blob list left off.
type wireMessage struct {
	msg       transfer.Message
	inventory string
}

// noteVersions records the file blobs of the inventory's snapshot by path.
func (w *moveWire) noteVersions(snap *capsule.Snapshot) {
	if w.versions == nil {
		w.versions = map[string][]digest.Digest{}
	}
	w.paths = map[digest.Digest]string{}
	for _, e := range snap.Entries {
		if e.Type != capsule.TypeFile || e.Size > maxFileDelta {
			continue
		}
		w.paths[e.Blob] = e.Path
		if v := w.versions[e.Path]; len(v) == 0 || v[len(v)-1] != e.Blob {
			w.versions[e.Path] = append(v[max(0, len(v)-2):], e.Blob)
		}
	}
}

// deltaPlan is the delta frames one push stream carries, by blob.
type deltaPlan struct {
	frames  map[digest.Digest]deltaBody
	guessed bool // a base is only guessed to be at the target
	files   int  // frames that carry a workspace file
}

type deltaBody struct {
	f api.Frame
	z []byte
}

func (p deltaPlan) used() bool { return len(p.frames) > 0 }

func (w *moveWire) hold(d digest.Digest) {
	if w.atPeer == nil {
		w.atPeer = map[digest.Digest]bool{}
	}
	w.atPeer[d] = true
}
