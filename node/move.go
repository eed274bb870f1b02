package node

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/oklog/ulid/v2"
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

func (mr *moveRun) result(agentID string, from ID) api.MoveResult {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return api.MoveResult{Agent: agentID, MoveID: mr.id, From: string(from), To: string(mr.to), Epoch: mr.epoch,
		Outcome: string(mr.outcome), Reason: mr.reason, FrozenMS: mr.frozenMS, BytesSent: mr.prog.BytesSent,
		BlobsSent: mr.prog.BlobsSent, BlobsSkipped: mr.prog.BlobsSkipped, BlobsDelta: mr.wire.deltas, RoundTripsFrozen: mr.frozenRT, PrecopyRounds: mr.rounds,
		WindowBytes: mr.windowBytes, Render: mr.render}
}

// startMove begins moving agent id to the peer to and returns at once; the
// move goes on in the background (Move waits for it).
func (n *Node) startMove(id string, to ID) (*moveRun, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return nil, err
	}
	if to == n.id {
		return nil, fmt.Errorf("%w: %s is this node's own ID: a move needs another node (a peer)", api.ErrInvalid, to)
	}
	peer, ok := n.peers.Get(to)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a peer of this node", api.ErrInvalid, to)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.blocked != nil {
		return nil, fmt.Errorf("%w: %v", api.ErrConflict, a.blocked)
	}
	if err := transfer.CheckStart(a.holder, a.src.machine); err != nil {
		return nil, fmt.Errorf("%w: %v", api.ErrConflict, err)
	}
	last := uint64(0)
	if a.src.machine != nil {
		last = a.src.machine.State().Epoch
	}
	moveID, err := ulid.New(ulid.Timestamp(n.clock.Now()), rand.Reader)
	if err != nil {
		return nil, err
	}
	cfg := n.sourceConfig()
	cfg.Agent, cfg.Move, cfg.Self, cfg.Peer = id, moveID.String(), string(n.id), string(peer.ID)
	cfg.Holder, cfg.Epoch = a.holder.Holder(), transfer.NextEpoch(a.holder.MaxEpoch(), last)
	src, err := transfer.NewSource(cfg)
	if err != nil {
		return nil, err
	}
	mr := newMoveRun(cfg.Move, peer.ID, cfg.Epoch)
	inv, err := a.liveInventory(mr)
	if err != nil {
		return nil, err
	}
	a.src.machine, a.src.move = src, mr
	n.m.started.Inc()
	n.log.Info("move started", "agent", id, "move", mr.id, "to", string(to), "epoch", cfg.Epoch)
	n.drive(a, mr, transfer.Input{Kind: transfer.InStart, Inventory: &inv})
	return mr, nil
}

// drive runs the driver loop of a in the background, starting with first.
func (n *Node) drive(a *tenant, mr *moveRun, first transfer.Input) {
	mr.mu.Lock()
	mr.driving = true
	mr.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.driveLoop(a, mr, first)
	}()
}

// driveLoop is the loop of transfer's package doc: step each queued input, persist
// its records, then send its messages and perform its actions, whose
// results are the next inputs. When nothing is left it waits a retry
// interval and ticks, until the source is done.
func (n *Node) driveLoop(a *tenant, mr *moveRun, queue ...transfer.Input) {
	for {
		if len(queue) == 0 {
			a.mu.Lock()
			done := a.src.machine.Done()
			a.mu.Unlock()
			if done || ctxDone(n.ctx) {
				break
			}
			select {
			case in := <-mr.inputs:
				queue = append(queue, in)
			case <-n.clock.After(n.cfg.RetryInterval):
				queue = append(queue, transfer.Input{Kind: transfer.InTick})
			case <-n.ctx.Done():
			}
			continue
		}
		in := queue[0]
		queue = queue[1:]
		rd := a.stepSource(in)
		queue = append(queue, n.execute(a, mr, rd)...)
		if rd.Outcome != "" {
			n.reportOutcome(a, mr, rd.Outcome)
		}
	}
	mr.mu.Lock()
	mr.driving = false
	mr.mu.Unlock()
}

// stepSource feeds in to the agent's Source and persists the records of
// the Ready, reporting a failed persist back to the Source.
func (a *tenant) stepSource(in transfer.Input) transfer.Ready {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.persistReady(a.src.machine.Step(in))
}

// persistReady makes rd's records durable before anything in rd may be
// sent or done; when that fails it tells the Source and returns the Ready
// it answers with instead. The caller holds a.mu.
func (a *tenant) persistReady(rd transfer.Ready) transfer.Ready {
	for len(rd.Records) > 0 {
		err := a.persist(rd.Records)
		if err == nil {
			break
		}
		a.n.log.Error("persist failed", "agent", a.id, "record", string(rd.Records[0].Kind), "err", err)
		rd = a.src.machine.Step(transfer.Input{Kind: transfer.InPersistFailed})
	}
	return rd
}

// execute sends the Ready's messages and performs its actions; it returns
// the inputs they produced.
func (n *Node) execute(a *tenant, mr *moveRun, rd transfer.Ready) []transfer.Input {
	var next []transfer.Input
	for _, m := range rd.Messages {
		next = append(next, n.send(a, mr, m)...)
	}
	for _, act := range rd.Actions {
		start := n.clock.Now()
		in, ok := n.act(a, mr, act)
		n.log.Debug("source action", "agent", a.id, "action", string(act.Kind), "ms", n.clock.Now().Sub(start).Milliseconds())
		if ok {
			next = append(next, in)
		}
	}
	return next
}

func (n *Node) act(a *tenant, mr *moveRun, act transfer.Action) (transfer.Input, bool) {
	switch act.Kind {
	case transfer.ActInventory:
		a.mu.Lock()
		inv, err := a.liveInventory(mr)
		a.mu.Unlock()
		if err != nil {
			n.log.Warn("inventory failed", "agent", a.id, "err", err)
			return transfer.Input{Kind: transfer.InPushed, OK: false, Problems: []string{"inventory: " + err.Error()}}, true
		}
		return transfer.Input{Kind: transfer.InInventory, Inventory: &inv}, true
	case transfer.ActPush:
		err := n.push(a, mr, act.Blobs, act.JournalFrom, act.Journal, nil)
		if err != nil {
			n.log.Warn("pre-copy push failed", "agent", a.id, "to", string(mr.to), "err", err)
			return transfer.Input{Kind: transfer.InPushed, Problems: []string{"push: " + err.Error()}}, true
		}
		if act.Journal.Count > 0 {
			mr.noteTargetJournal(act.Journal)
		}
		return transfer.Input{Kind: transfer.InPushed, OK: true}, true
	case transfer.ActFreeze:
		return a.freezeForMove(mr), true
	case transfer.ActResume:
		a.resume(act.Epoch, mr)
	case transfer.ActRetire:
		a.retire(act, mr)
	}
	return transfer.Input{}, false
}

// send delivers one request to the peer and returns the replies as inputs,
// or InSendFailed when the request or its reply was lost.
func (n *Node) send(a *tenant, mr *moveRun, m transfer.Message) []transfer.Input {
	mr.setPhase(phaseOf(m.Type))
	if m.Type == transfer.MsgPrepare || m.Type == transfer.MsgActivate {
		a.mu.Lock()
		m.Stopped = !a.meta.Run // the operator's intent travels with the agent
		a.mu.Unlock()
	}
	start := n.clock.Now()
	var replies []api.Message
	var err error
	switch m.Type {
	case transfer.MsgHave, transfer.MsgOffer, transfer.MsgPrepare:
		replies, err = n.pushMessage(a, mr, m)
	default:
		replies, err = n.call(ID(m.To), m)
	}
	mr.mu.Lock()
	if !mr.frozenAt.IsZero() && mr.frozenMS == 0 {
		mr.frozenRT++
	}
	mr.mu.Unlock()
	n.log.Debug("request", "agent", a.id, "call", string(m.Type), "ms", n.clock.Now().Sub(start).Milliseconds(), "err", err)
	if err != nil {
		n.log.Warn("request failed", "agent", a.id, "call", string(m.Type), "to", m.To, "err", err)
		return []transfer.Input{{Kind: transfer.InSendFailed, Problems: []string{err.Error()}}}
	}
	var out []transfer.Input
	for _, r := range replies {
		var tm transfer.Message
		if json.Unmarshal(r.Body, &tm) != nil {
			continue
		}
		if tm.Type == transfer.MsgActivated || tm.Type == transfer.MsgResolved && tm.Resolution == transfer.ResolvedCommitted {
			mr.markRunningOnTarget(n.clock.Now())
		}
		if tm.Type == transfer.MsgWant || tm.Type == transfer.MsgPromise {
			mr.noteWant(m.Blobs, tm.Want, r.Bases)
			mr.noteTargetJournal(tm.Have)
		}
		out = append(out, transfer.Receive(tm))
	}
	if len(out) == 0 {
		n.log.Warn("request unanswered", "agent", a.id, "call", string(m.Type), "to", m.To)
		return []transfer.Input{{Kind: transfer.InSendFailed, Problems: []string{fmt.Sprintf("%s: %s sent no reply", m.Type, m.To)}}}
	}
	return out
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

// call sends one message through the peer API.
func (n *Node) call(to ID, m transfer.Message) ([]api.Message, error) {
	c, err := n.client(to)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.RequestTimeout)
	defer cancel()
	rep, err := c.Message(ctx, api.Message{Call: string(m.Type), Body: body})
	if err != nil {
		return nil, err
	}
	return rep.Messages, nil
}

// pushMessage streams a request that carries an inventory (have, offer,
// prepare) as the message frame of a push: first the manifest and
// snapshot.json the target lacks (so that the message can leave its blob
// list off the wire: inventory by manifest), then for MsgPrepare the
// blobs it lists in Send and the journal tail after JournalFrom: one
// round trip for the whole delta.
func (n *Node) pushMessage(a *tenant, mr *moveRun, m transfer.Message) ([]api.Message, error) {
	wire, heads := mr.byManifest(m)
	blobs := heads
	var from, to transfer.JournalPos
	switch m.Type {
	case transfer.MsgPrepare:
		blobs = appendNew(blobs, m.Send)
		from, to = m.JournalFrom, m.Journal
	case transfer.MsgOffer:
		// The journal tail travels with the offer (harmless, like pre-copy:
		// it only extends the target's journal copy), so the target can
		// start the render its prepare needs one round trip earlier.
		if p, ok := mr.targetJournal(); ok && p.Count <= m.Journal.Count {
			from, to = p, m.Journal
		}
	}
	err := n.push(a, mr, blobs, from, to, &wire)
	if err != nil && m.Type == transfer.MsgOffer && to.Count > 0 {
		// The target's journal copy was not where this node thought: offer
		// without the tail (the prepare brings it).
		n.log.Info("offer with the journal tail failed; offering without it", "agent", a.id, "err", err)
		err = n.push(a, mr, blobs, transfer.JournalPos{}, transfer.JournalPos{}, &wire)
	}
	if err != nil {
		return nil, err
	}
	return mr.takeReplies(), nil
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

// push streams blobs, the journal events after from up to to, and
// optionally a message to the peer in one request. A blob the target may
// hold an older version of travels as a delta frame; when the stream used
// a base the target was only guessed to hold, a failed push is sent once
// more without it.
func (n *Node) push(a *tenant, mr *moveRun, blobs []transfer.Blob, from, to transfer.JournalPos, m *wireMessage) error {
	tail, start, err := a.journalTail(mr, from, to)
	if err != nil {
		return err
	}
	guess := m != nil && m.msg.Type == transfer.MsgHave
	plan := mr.planDeltas(a, blobs, guess)
	err = n.pushOnce(a, mr, blobs, tail, start, m, plan)
	if err != nil && plan.used() {
		mr.pushFailed(plan)
		if plan.guessed {
			n.log.Info("push with a guessed delta base failed; sending whole blobs", "agent", a.id, "err", err)
			plan = mr.planDeltas(a, blobs, false)
			err = n.pushOnce(a, mr, blobs, tail, start, m, plan)
		}
	} else if err != nil && m != nil {
		mr.pushFailed(plan)
	}
	if err == nil {
		mr.pushed(blobs, plan, m)
	}
	return err
}

func (n *Node) pushOnce(a *tenant, mr *moveRun, blobs []transfer.Blob, tail []byte, start uint64, m *wireMessage, plan deltaPlan) error {
	c, err := n.client(mr.to)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(n.writeStream(pw, mr, blobs, tail, start, m, plan)) }()
	req := api.PushRequest{Agent: a.id, Call: "push"}
	if m != nil {
		req.Call = string(m.msg.Type)
	} else {
		mr.mu.Lock()
		req.Manifest = mr.manifest // the target may build the next staging from it
		mr.mu.Unlock()
	}
	rep, err := c.Push(n.ctx, req, pr)
	pr.CloseWithError(errors.New("push done"))
	if err != nil {
		return err
	}
	mr.mu.Lock()
	mr.lastReplies = rep.Messages
	if rep.Render != nil {
		mr.render = rep.Render
	}
	mr.mu.Unlock()
	n.m.bytesSent.Add(float64(rep.Bytes))
	n.m.blobsSent.Add(float64(len(blobs)))
	mr.sent(rep.Bytes, blobs)
	return nil
}

func (n *Node) writeStream(w io.Writer, mr *moveRun, blobs []transfer.Blob, tail []byte, start uint64, m *wireMessage, plan deltaPlan) error {
	if err := api.WriteStreamHeader(w); err != nil {
		return err
	}
	for _, b := range blobs {
		if d, ok := plan.frames[b.Digest]; ok {
			if _, err := api.WriteFrame(w, d.f, bytesReader(d.z)); err != nil {
				return err
			}
			continue
		}
		if err := n.writeBlob(w, mr, b); err != nil {
			return err
		}
	}
	if len(tail) > 0 {
		f := api.Frame{Kind: api.FrameJournal, Count: start, Size: int64(len(tail))}
		if _, err := api.WriteFrame(w, f, bytesReader(tail)); err != nil {
			return err
		}
	}
	if m == nil {
		return nil
	}
	body, err := json.Marshal(api.Message{Call: string(m.msg.Type), Body: mustJSON(m.msg), Inventory: m.inventory})
	if err != nil {
		return err
	}
	_, err = api.WriteFrame(w, api.Frame{Kind: api.FrameMessage, Size: int64(len(body))}, bytesReader(body))
	return err
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

func (n *Node) writeBlob(w io.Writer, mr *moveRun, b transfer.Blob) error {
	mr.mu.Lock()
	mem, inMem := mr.src.mem[b.Digest]
	path, ok := mr.src.paths[b.Digest]
	mr.mu.Unlock()
	if inMem {
		_, err := api.WriteFrame(w, api.Frame{Kind: api.FrameBlob, Digest: b.Digest, Size: b.Size}, bytesReader(mem))
		return err
	}
	if !ok {
		return fmt.Errorf("push: %s is not in the inventory", b.Digest.Short())
	}
	f, err := n.fsys.Open(path)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	defer f.Close()
	_, err = api.WriteFrame(w, api.Frame{Kind: api.FrameBlob, Digest: b.Digest, Size: b.Size}, f)
	return err
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// freezeForMove stops the runner at a step boundary (ActFreeze), journals
// the freeze, commits the capsule and reports the frozen inventory.
func (a *tenant) freezeForMove(mr *moveRun) transfer.Input {
	mr.setPhase(api.PhaseFreeze)
	if h := a.n.hooks.beforeFreeze; h != nil {
		h(a.id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	reason := fmt.Sprintf("move %s to %s", mr.id, mr.to)
	err := a.freezeLocked(reason, mr)
	if err == nil {
		var inv transfer.Inventory
		if inv, err = a.frozenInventory(mr); err == nil {
			mr.noteFrozenHeads(a, inv)
			return transfer.Input{Kind: transfer.InFrozen, OK: true, Inventory: &inv}
		}
	}
	a.n.log.Warn("freeze failed", "agent", a.id, "err", err)
	return transfer.Input{Kind: transfer.InFrozen, OK: false, Problems: []string{err.Error()}}
}

// freezeLocked stops the agent at a step boundary and journals the freeze
// (durably). The frozen window starts when the runner has stopped: until
// its current step ends the agent is still working.
func (a *tenant) freezeLocked(reason string, mr *moveRun) error {
	stop := func() {
		mr.mu.Lock()
		mr.frozenAt = a.n.clock.Now()
		mr.mu.Unlock()
	}
	if a.run != nil {
		close(a.run.stop)
		<-a.run.done
		a.run = nil
	}
	stop()
	if err := a.openLog(a.holder.Holder()); err != nil {
		return err
	}
	_, err := a.log.Append(journal.KindFrozen, a.holder.Holder(), a.n.wallTime(), journal.Frozen{Reason: reason})
	a.n.log.Info("agent frozen", "agent", a.id, "epoch", a.holder.Holder(), "reason", reason)
	return err
}

// liveInventory commits the running agent's current state between two
// steps and returns its inventory, for pre-copy.
func (a *tenant) liveInventory(mr *moveRun) (transfer.Inventory, error) {
	a.stepMu.Lock()
	defer a.stepMu.Unlock()
	mr.mu.Lock()
	mr.rounds++
	mr.mu.Unlock()
	if err := a.openLog(a.holder.Holder()); err != nil {
		return transfer.Inventory{}, err
	}
	if err := a.commitLocked(); err != nil {
		return transfer.Inventory{}, err
	}
	inv, err := a.inventoryLocked(mr)
	if err == nil {
		mr.noteLiveHeads(a, inv)
	}
	return inv, err
}

// resume runs the agent again after a rollback (at its old epoch) or a
// force (at a new epoch, adopted first).
func (a *tenant) resume(epoch uint64, mr *moveRun) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if epoch != a.holder.Holder() {
		if _, err := a.stepTarget(transfer.Input{Kind: transfer.InAdopt, Epoch: epoch}); err != nil {
			a.n.log.Error("adopt forced epoch failed", "agent", a.id, "epoch", epoch, "err", err)
			return
		}
	}
	if !a.meta.Run {
		return
	}
	reason := "move " + mr.id + " rolled back"
	if err := a.startLocked(journal.KindResumed, journal.Resumed{Reason: reason}); err != nil {
		a.n.log.Error("resume failed", "agent", a.id, "err", err)
	}
}

// retire records that the agent now lives on the successor: the Target
// releases it, the journal closes, and the capsule folder becomes a cache
// (blobs into the CAS store, the journal into incoming.jsonl) so that a
// later move back sends only what changed. The frozen workspace stays as
// the shadow of such a move (keepShadow), when mr knows what it holds.
func (a *tenant) retire(act transfer.Action, mr *moveRun) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.stepTarget(transfer.Input{Kind: transfer.InRelease, Move: act.Move, Epoch: act.Epoch}); err != nil {
		a.n.log.Error("release failed", "agent", a.id, "err", err)
		return
	}
	events := int64(-1)
	if a.log != nil {
		events = a.log.Summary().Events
		_ = a.log.Close()
		a.log = nil
	}
	mr.mu.Lock()
	fw := mr.frozenWork
	mr.mu.Unlock()
	if err := a.toCache(events, fw); err != nil {
		a.n.log.Warn("retire: keeping the capsule folder", "agent", a.id, "err", err)
	}
	a.n.log.Info("agent retired", "agent", a.id, "successor", act.Peer, "epoch", act.Epoch)
}

// reportOutcome records the source's verdict and wakes Move callers when it
// is final.
func (n *Node) reportOutcome(a *tenant, mr *moveRun, o transfer.Outcome) {
	a.mu.Lock() // lock order: agent, then move
	note := a.src.machine.State().Note
	a.mu.Unlock()
	mr.mu.Lock()
	mr.outcome = o
	mr.reason = note
	mr.phase = api.PhaseDone
	if o == transfer.OutcomeWaiting {
		mr.phase = api.PhaseResolve
	}
	final := o.Final() && !mr.finished
	if final {
		mr.finished = true
	}
	if o == transfer.OutcomeWaiting && !mr.waited {
		mr.waited = true
		close(mr.waiting)
	}
	frozen := mr.frozenMS
	mr.mu.Unlock()
	switch o {
	case transfer.OutcomeCommitted:
		n.m.committed.Inc()
		n.m.frozen.Observe(float64(frozen) / 1000)
	case transfer.OutcomeRolledBack:
		n.m.rolledBack.Inc()
	case transfer.OutcomeStale:
		n.m.stale.Inc()
	}
	if note == "" {
		n.log.Info("move outcome", "agent", a.id, "move", mr.id, "to", string(mr.to), "outcome", string(o), "frozen_ms", frozen)
	} else {
		n.log.Warn("move outcome", "agent", a.id, "move", mr.id, "to", string(mr.to), "outcome", string(o), "reason", note)
	}
	if final {
		mr.setPhase(api.PhaseDone)
		close(mr.done)
	}
}
