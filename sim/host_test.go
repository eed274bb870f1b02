package sim

import (
	"fmt"
	"os"
	"path"
	"slices"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// stepSource feeds in to the node's source and executes the Ready.
func (n *node) stepSource(in transfer.Input) {
	if !n.up || n.source == nil {
		return
	}
	n.execSource(n.source.Step(in))
}

func (n *node) execSource(rd transfer.Ready) {
	if n.w.mutation == mutSendBeforePersist {
		n.sendAll(rd.Messages)
		rd.Messages = nil
	}
	if err := n.persist(rd.Records); err != nil {
		n.execSource(n.source.Step(transfer.Input{Kind: transfer.InPersistFailed}))
		return
	}
	n.sendAll(rd.Messages)
	if rd.Outcome != "" {
		n.w.trace("%s outcome %s", n.id, rd.Outcome)
		n.w.outcomes[rd.Outcome]++
	}
	for _, a := range rd.Actions {
		n.sourceAction(a)
	}
}

func (n *node) sendAll(ms []transfer.Message) {
	for _, m := range ms {
		n.sendRequest(m)
	}
}

// sendRequest sends a source's request with what travels with it.
func (n *node) sendRequest(m transfer.Message) {
	p := &packet{msg: m}
	if m.Type == transfer.MsgPrepare {
		p.blobs = map[digest.Digest][]byte{}
		for _, b := range m.Send {
			if body, err := vfs.ReadFile(n.fs, casPath(b.Digest)); err == nil {
				p.blobs[b.Digest] = body
			}
		}
		if int(m.JournalFrom.Count) <= len(n.journal) {
			p.tail = slices.Clone(n.journal[m.JournalFrom.Count:])
		}
		p.manifest = manifestBytes(m.Blobs, m.Journal)
	}
	n.out = &outstanding{msg: m, deadline: n.w.now + n.w.cfg.timeout}
	n.w.send(n, p)
}

func (n *node) sourceAction(a transfer.Action) {
	w := n.w
	switch a.Kind {
	case transfer.ActInventory:
		inv := n.inventory()
		n.stepSource(transfer.Input{Kind: transfer.InInventory, Inventory: &inv})
	case transfer.ActPush:
		n.stepSource(transfer.Input{Kind: transfer.InPushed, OK: n.push(a)})
	case transfer.ActFreeze:
		n.running = 0 // the runner stops at a step boundary first, as the node's freeze does
		if w.fault(n, faultNoSpace, "freeze") {
			w.cover(coverNoSpace, "Frz")
			n.stepSource(transfer.Input{Kind: transfer.InFrozen, Problems: []string{"no space"}})
			return
		}
		inv := n.inventory()
		if err := n.write("manifest", fileMan, manifestBytes(inv.Blobs, inv.Journal)); err != nil {
			n.stepSource(transfer.Input{Kind: transfer.InFrozen, Problems: []string{err.Error()}})
			return
		}
		n.stepSource(transfer.Input{Kind: transfer.InFrozen, OK: true, Inventory: &inv})
	case transfer.ActResume:
		if a.Epoch != n.target.Holder() {
			n.execTarget(n.target.Step(transfer.Input{Kind: transfer.InAdopt, Epoch: a.Epoch}))
		}
		if e, ok := n.mayRun(); ok {
			n.running = e
			w.trace("%s resumes at %d", n.id, e)
		}
	case transfer.ActRetire:
		n.running = 0
		n.execTarget(n.target.Step(transfer.Input{Kind: transfer.InRelease, Move: a.Move, Epoch: a.Epoch}))
	}
}

// push is pre-copy: the blobs go to the peer's CAS store (checked on
// receipt) while the agent still runs.
func (n *node) push(a transfer.Action) bool {
	peer := n.w.nodes[a.Peer]
	if !peer.up || n.w.cut(n.id, peer.id) || n.w.fault(n, faultDropReq, "push") {
		n.w.cover(coverReqLost, "Inv")
		return false
	}
	ok := true
	for _, b := range a.Blobs {
		body, err := vfs.ReadFile(n.fs, casPath(b.Digest))
		if err != nil {
			ok = false
			continue
		}
		if n.w.fault(n, faultCorrupt, "push") {
			body = corrupt(body)
			n.w.cover(coverCorrupt, "Xfr")
		}
		if peer.safePut("push", b.Digest, body) != nil {
			ok = false
		}
	}
	return ok
}

// safePut stores a pushed blob on the peer, absorbing the peer's crash.
func (n *node) safePut(label string, d digest.Digest, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(crashSignal)
			if !ok {
				panic(r)
			}
			n.w.crashNode(c.n)
			err = fmt.Errorf("peer crashed")
		}
	}()
	if err := n.putBlob(label, d, body); err != nil {
		if err == errNoSpace {
			n.w.cover(coverNoSpace, "Inv")
		}
		return err
	}
	return nil
}

func corrupt(b []byte) []byte {
	c := slices.Clone(b)
	if len(c) > 0 {
		c[len(c)/2] ^= 0x20
	}
	return c
}

// handleRequest is the target node's handler for one request.
func (n *node) handleRequest(p *packet) {
	m := p.msg
	n.handling = m.Type
	defer func() { n.handling, n.act = "", "" }()
	in := transfer.Receive(m)
	switch m.Type {
	case transfer.MsgHave, transfer.MsgOffer:
		in.Missing, in.Journal = n.missing(m.Blobs), journalPos(n.journal)
	case transfer.MsgPrepare:
		if err := n.stage(p); err != nil {
			if err == errNoSpace {
				n.w.cover(coverNoSpace, "Xfr")
			}
			n.discard(m.Move) // like an HTTP 503: the source sees a lost request
			return
		}
	}
	if n.w.mutation == mutResolveReads && m.Type == transfer.MsgResolve {
		n.resolveByReading(m)
		return
	}
	before := n.target.State()
	n.execTarget(n.target.Step(in))
	if m.Type == transfer.MsgPrepare {
		if pd := n.target.Pending(); pd == nil || pd.Move != m.Move {
			n.discard(m.Move) // refused: nothing may stay staged for it
		}
	}
	n.coverRefusal(m, before)
}

// resolveByReading is the mutation "resolve reads instead of fencing": it
// answers from the state without aborting or burning the epoch.
func (n *node) resolveByReading(m transfer.Message) {
	r := transfer.Message{Type: transfer.MsgResolved, Agent: m.Agent, Move: m.Move, Epoch: m.Epoch,
		From: n.id, To: m.From, Re: m.Type, Resolution: transfer.ResolvedAborted}
	if n.target.Holder() == m.Epoch {
		r.Resolution = transfer.ResolvedCommitted
	}
	n.w.send(n, &packet{msg: r})
}

// stage stores what travels with MsgPrepare in the move's staging folder,
// durably: blobs (as received), the journal (local prefix + tail), the
// manifest bytes and the inventory.
func (n *node) stage(p *packet) error {
	m := p.msg
	dir := stagingDir(m.Move)
	if pd := n.target.Pending(); pd == nil || pd.Move != m.Move || pd.Phase != transfer.PhasePromised {
		return nil // nothing to stage: the target answers from its state
	}
	for _, d := range slices.Sorted(mapKeys(p.blobs)) {
		if err := n.write("stage:blob", path.Join(dir, "blobs", d.Hex()), p.blobs[d]); err != nil {
			return err
		}
	}
	var j []event
	if int(m.JournalFrom.Count) <= len(n.journal) {
		j = slices.Clone(n.journal[:m.JournalFrom.Count])
	}
	j = append(j, p.tail...)
	if err := n.write("stage:journal", path.Join(dir, "journal"), encodeJournal(j)); err != nil {
		return err
	}
	if err := n.write("stage:manifest", path.Join(dir, "manifest"), p.manifest); err != nil {
		return err
	}
	return n.writeJSON("stage:inv", path.Join(dir, "inv.json"), m.Blobs)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// execTarget persists a target Ready, sends its reply and runs its actions,
// feeding their results back.
func (n *node) execTarget(rd transfer.Ready) {
	if n.w.mutation == mutSendBeforePersist {
		for _, m := range rd.Messages {
			n.w.send(n, &packet{msg: m})
		}
		rd.Messages = nil
	}
	if err := n.persist(rd.Records); err != nil {
		n.target.Step(transfer.Input{Kind: transfer.InPersistFailed})
		return
	}
	for _, m := range rd.Messages {
		n.w.send(n, &packet{msg: m})
	}
	for _, a := range rd.Actions {
		if res, ok := n.targetAction(a); ok {
			n.execTarget(n.target.Step(res))
		}
	}
}

func (n *node) targetAction(a transfer.Action) (transfer.Input, bool) {
	n.act = a.Kind
	defer func() { n.act = "" }()
	switch a.Kind {
	case transfer.ActVerify:
		problems := n.verify(a)
		if len(problems) == 0 && n.w.fault(n, faultCrashBefore, "verify") {
			panic(crashSignal{n})
		}
		return transfer.Input{Kind: transfer.InVerified, OK: len(problems) == 0, Problems: problems}, true
	case transfer.ActPrepare:
		if n.w.fault(n, faultPrepare, "prepare") {
			n.w.cover(coverTruncated, "Prp")
			return transfer.Input{Kind: transfer.InPrepared, Problems: []string{"secret OPENAI_API_KEY is not available"}}, true
		}
		return transfer.Input{Kind: transfer.InPrepared, OK: true}, true
	case transfer.ActStart:
		n.promote(a.Move)
		if e, ok := n.mayRun(); ok {
			n.running = e
			n.w.committed = max(n.w.committed, e)
			n.w.trace("%s starts at %d", n.id, e)
			n.w.checkHolder(n)
		}
	case transfer.ActDiscard:
		n.discard(a.Move)
	}
	return transfer.Input{}, false
}

// verify checks the staged state of a move: every blob present (staged or
// in the CAS store) with its digest and size, the manifest bytes' digest,
// the journal chain up to the announced head.
func (n *node) verify(a transfer.Action) []string {
	dir := stagingDir(a.Move)
	var problems []string
	for _, b := range a.Blobs {
		body, err := vfs.ReadFile(n.fs, path.Join(dir, "blobs", b.Digest.Hex()))
		if err != nil {
			body, err = vfs.ReadFile(n.fs, casPath(b.Digest))
		}
		switch {
		case err != nil:
			problems = append(problems, "missing blob "+b.Digest.Short())
			n.w.cover(coverTruncated, "Ver")
		case int64(len(body)) != b.Size || digest.FromBytes(body) != b.Digest:
			problems = append(problems, "corrupt blob "+b.Digest.Short())
			n.w.cover(coverCorrupt, "Ver")
		}
	}
	man, err := vfs.ReadFile(n.fs, path.Join(dir, "manifest"))
	if err != nil || digest.FromBytes(man) != a.Manifest {
		problems = append(problems, "manifest mismatch")
		n.w.cover(coverTruncated, "Ver")
	}
	j := n.readJournal(path.Join(dir, "journal"))
	if checkChain(j) != nil || journalPos(j) != a.Journal {
		problems = append(problems, "journal chain mismatch")
		n.w.cover(coverTruncated, "Ver")
	}
	return problems
}

// promote makes the staging of a committed move the live agent: blobs into
// the CAS store, then the journal and the inventory, then the staging goes.
// It is idempotent: a restart redoes it for a committed move.
func (n *node) promote(move string) {
	dir := stagingDir(move)
	var inv []transfer.Blob
	if !n.readJSON(path.Join(dir, "inv.json"), &inv) {
		return // already promoted
	}
	j := n.readJournal(path.Join(dir, "journal"))
	for _, b := range inv {
		if body, err := vfs.ReadFile(n.fs, path.Join(dir, "blobs", b.Digest.Hex())); err == nil {
			n.mustWrite("promote:blob", casPath(b.Digest), body)
		}
	}
	if err := n.writeJournal("promote:journal", j); err != nil {
		panic(crashSignal{n})
	}
	n.mustWriteJSON("promote:inv", fileInv, inv)
	n.journal, n.inv = j, inv
	n.discard(move)
}

// mustWrite is for writes that cannot be refused (promotion after the
// commit): a write error stops the node, which redoes the work on restart.
func (n *node) mustWrite(label, name string, data []byte) {
	if err := n.write(label, name, data); err != nil {
		panic(crashSignal{n})
	}
}

func (n *node) mustWriteJSON(label, name string, v any) {
	if err := n.writeJSON(label, name, v); err != nil {
		panic(crashSignal{n})
	}
}

func (n *node) discard(move string) {
	if err := n.fs.RemoveAll(stagingDir(move)); err != nil {
		n.w.violate("%s: discard %s: %v", n.id, move, err)
	}
	_ = n.fs.SyncDir("staging")
}

// appendEvent is the runner: one durable journal entry under its epoch,
// appended to the live journal and fsynced.
func (n *node) appendEvent() {
	e := newEvent(n.journal, n.running, n.id)
	if err := n.appendLine("journal", fileJournal, e.line()); err != nil {
		return // not written: the runner retries later
	}
	n.journal = append(n.journal, e)
	n.w.ghost = append(n.w.ghost, e)
}

// appendLine appends data to name and fsyncs it, with the planned faults.
func (n *node) appendLine(label, name string, data []byte) error {
	w := n.w
	if w.fault(n, faultCrashBefore, label) {
		panic(crashSignal{n})
	}
	if w.fault(n, faultNoSpace, label) {
		return errNoSpace
	}
	_, statErr := n.fs.Stat(name)
	f, err := n.fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && statErr != nil {
		err = n.fs.SyncDir(path.Dir(name))
	}
	if err != nil {
		return err
	}
	if w.fault(n, faultCrashAfter, label) {
		panic(crashSignal{n})
	}
	return nil
}

// writeJournal replaces the live journal (promotion) atomically.
func (n *node) writeJournal(label string, evs []event) error {
	return n.write(label, fileJournal, encodeJournal(evs))
}

// addBlob is the runner changing a workspace file.
func (n *node) addBlob() {
	body := fmt.Appendf(nil, "file written by %s at step %d, epoch %d", n.id, n.w.now, n.running)
	b := transfer.Blob{Digest: digest.FromBytes(body), Size: int64(len(body))}
	if n.putBlob("blob", b.Digest, body) != nil {
		return
	}
	inv := append(slices.Clone(n.inv), b)
	if n.writeJSON("inv", fileInv, inv) == nil {
		n.inv = inv
	}
}

// restart rebuilds the node from its disk alone.
func (n *node) restart() {
	w := n.w
	n.up = true
	n.out = nil
	n.loadLive()
	tr, sr := n.loadRecords()
	n.target = transfer.NewTarget(agent, n.id)
	if tr != nil {
		t, err := transfer.RecoverTarget([]transfer.Record{*tr})
		if err != nil {
			w.violate("%s: recover target: %v", n.id, err)
		} else {
			n.target = t
		}
	}
	var rd transfer.Ready
	n.source = nil
	if sr != nil {
		s, r, err := transfer.RecoverSource([]transfer.Record{*sr}, w.sourceConfig())
		if err != nil {
			w.violate("%s: recover source: %v", n.id, err)
		}
		n.source, rd = s, r
	}
	durable := n.target.MaxEpoch()
	if n.source != nil {
		durable = max(durable, n.source.State().Epoch)
	}
	if durable < n.durableMax {
		w.violate("%s: epoch went back from %d to %d across a restart", n.id, n.durableMax, durable)
	}
	n.durableMax = durable
	if tr == nil && n.target.Holder() == 0 {
		w.cover(coverHolderLost, "Frz")
	}
	w.trace("%s restarts (holder %d, max %d)", n.id, n.target.Holder(), n.target.MaxEpoch())
	n.gcStaging()
	if n.source != nil {
		n.execSource(rd)
	}
	if e, ok := n.mayRun(); ok && n.running == 0 {
		n.running = e
		w.checkHolder(n)
	}
}

// gcStaging finishes the promotion of a committed move and removes the
// staging of every move that is not pending.
func (n *node) gcStaging() {
	pd := n.target.Pending()
	for _, mv := range n.stagingMoves() {
		if pd != nil && pd.Move == mv {
			continue
		}
		if n.committedMove(mv) {
			n.promote(mv)
			continue
		}
		n.discard(mv)
	}
}

func (n *node) committedMove(move string) bool {
	for _, h := range n.target.State().History {
		if h.Move == move && h.Result == transfer.ResolvedCommitted && h.Epoch == n.target.Holder() {
			return true
		}
	}
	return false
}
