package transfer

import "fmt"

// Target is one node's durable view of one agent: the highest epoch it has
// seen, whether it holds the agent, and the incoming move in progress. It
// answers the requests of sources (MsgHave ... MsgAbort) and learns local
// facts through InAdopt and InRelease. One Target per agent per node; it
// is a pure state machine (see the package doc). Not safe for concurrent
// use: the node serializes Step calls per agent.
type Target struct {
	st TargetState
	// work is the request under verification or preparation (volatile);
	// nil when none.
	work *Message
	// undo restores the state before the last Ready with records, in case
	// the host reports InPersistFailed.
	undo *Target
}

// NewTarget returns the Target of an agent this node has never seen.
func NewTarget(agent, self string) *Target {
	return &Target{st: TargetState{Agent: agent, Self: self}}
}

// State returns a copy of the target's durable state.
func (t *Target) State() TargetState {
	st := t.st
	if st.Pending != nil {
		p := *st.Pending
		st.Pending = &p
	}
	st.History = append([]MoveRef(nil), st.History...)
	return st
}

// MaxEpoch returns the highest epoch this node has seen for the agent.
func (t *Target) MaxEpoch() uint64 { return t.st.MaxEpoch }

// Holder returns the epoch at which this node holds the agent, or 0.
func (t *Target) Holder() uint64 { return t.st.Holder }

// Pending returns the incoming move in progress, or nil.
func (t *Target) Pending() *Pending {
	if t.st.Pending == nil {
		return nil
	}
	p := *t.st.Pending
	return &p
}

// Busy reports whether a verify or prepare action is outstanding.
func (t *Target) Busy() bool { return t.work != nil }

// Step feeds one input to the target and returns what the host must do.
// For a request, the reply is in the returned Ready, or — when the target
// asked for ActVerify or ActPrepare — in the Ready returned for the
// action's result. The node answers the request with that reply.
func (t *Target) Step(in Input) Ready {
	if in.Kind == InPersistFailed {
		if t.undo != nil {
			*t = *t.undo
		}
		return Ready{}
	}
	prev := t.clone()
	t.undo = nil
	r := t.step(in)
	if len(r.Records) > 0 {
		t.undo = prev
	}
	return r
}

func (t *Target) clone() *Target {
	c := &Target{st: t.State(), work: t.work}
	return c
}

func (t *Target) step(in Input) Ready {
	switch in.Kind {
	case InMessage:
		if in.Msg == nil {
			return Ready{}
		}
		return t.receive(*in.Msg, in)
	case InVerified:
		return t.verified(in.OK, in.Problems)
	case InPrepared:
		return t.prepared(in.OK, in.Problems)
	case InAdopt:
		return t.adopt(in.Epoch)
	case InRelease:
		return t.release(in.Move, in.Epoch)
	}
	return Ready{}
}

func (t *Target) receive(m Message, in Input) Ready {
	if m.Agent != t.st.Agent || m.To != t.st.Self || !m.Type.IsRequest() || m.Move == "" {
		return t.reply(m, MsgRefused, ReasonMismatch)
	}
	switch m.Type {
	case MsgHave:
		r := t.reply(m, MsgWant, "")
		r.Messages[0].Want, r.Messages[0].Have = in.Missing, in.Journal
		return r
	case MsgOffer:
		return t.offer(m, in)
	case MsgPrepare:
		return t.prepare(m)
	case MsgActivate:
		return t.activate(m)
	case MsgResolve:
		return t.resolve(m)
	case MsgAbort:
		return t.abort(m)
	}
	return Ready{}
}

// reply builds the reply of type typ to request m.
func (t *Target) reply(m Message, typ MsgType, why Reason) Ready {
	out := Message{Type: typ, Agent: m.Agent, Move: m.Move, Epoch: m.Epoch, From: t.st.Self, To: m.From,
		Re: m.Type, Reason: why, MaxEpoch: t.st.MaxEpoch, Holder: t.st.Holder}
	return Ready{Messages: []Message{out}}
}

func (t *Target) isPending(m Message) bool {
	p := t.st.Pending
	return p != nil && p.Move == m.Move && p.Epoch == m.Epoch
}

// ended returns how move ended on this target, if it remembers.
func (t *Target) ended(move string) (MoveRef, bool) {
	for _, h := range t.st.History {
		if h.Move == move {
			return h, true
		}
	}
	return MoveRef{}, false
}

func (t *Target) remember(move string, epoch uint64, res Resolution) {
	t.st.History = append(t.st.History, MoveRef{Move: move, Epoch: epoch, Result: res})
	if n := len(t.st.History); n > historyLen {
		t.st.History = append([]MoveRef(nil), t.st.History[n-historyLen:]...)
	}
}

func (t *Target) record(kind RecordKind) Record {
	st := t.State()
	return Record{Kind: kind, Agent: t.st.Agent, Target: &st}
}

// offer persists the promise (the epoch, and the pending move) before it
// answers. A newer offer supersedes a pending move that never activated.
func (t *Target) offer(m Message, in Input) Ready {
	if t.isPending(m) {
		r := t.reply(m, MsgPromise, "")
		r.Messages[0].Want, r.Messages[0].Have = in.Missing, in.Journal
		return r
	}
	if h, ok := t.ended(m.Move); ok {
		return t.refuseEnded(m, h)
	}
	if t.st.Holder > 0 {
		return t.reply(m, MsgRefused, ReasonHolder)
	}
	if m.Epoch <= t.st.MaxEpoch {
		return t.reply(m, MsgRefused, ReasonStale)
	}
	var r Ready
	if old := t.st.Pending; old != nil {
		r = t.abortPending("superseded by move " + m.Move)
		r.Records = nil
	}
	t.st.MaxEpoch = m.Epoch
	t.st.Pending = &Pending{Move: m.Move, Epoch: m.Epoch, Source: m.From, Phase: PhasePromised}
	r.persist(t.record(RecPromised))
	p := t.reply(m, MsgPromise, "")
	p.Messages[0].Want, p.Messages[0].Have = in.Missing, in.Journal
	return r.merge(p)
}

func (t *Target) refuseEnded(m Message, h MoveRef) Ready {
	if h.Result == ResolvedCommitted {
		return t.reply(m, MsgRefused, ReasonActive)
	}
	return t.reply(m, MsgRefused, ReasonAborted)
}

// refuseUnknown answers a request for a move this target neither has
// pending nor remembers.
func (t *Target) refuseUnknown(m Message) Ready {
	if m.Epoch <= t.st.MaxEpoch {
		return t.reply(m, MsgRefused, ReasonStale)
	}
	return t.reply(m, MsgRefused, ReasonUnknownMove)
}

func (t *Target) prepare(m Message) Ready {
	switch {
	case t.isPending(m) && t.work != nil:
		return t.reply(m, MsgRefused, ReasonBusy)
	case t.isPending(m) && t.st.Pending.Phase == PhasePrepared:
		return t.reply(m, MsgPrepared, "")
	case t.isPending(m):
		t.work = &m
		return Ready{Actions: []Action{{Kind: ActVerify, Agent: m.Agent, Move: m.Move, Epoch: m.Epoch,
			Blobs: m.Blobs, Manifest: m.Manifest, Journal: m.Journal}}}
	}
	if h, ok := t.ended(m.Move); ok {
		return t.refuseEnded(m, h)
	}
	return t.refuseUnknown(m)
}

func (t *Target) verified(ok bool, problems []string) Ready {
	m := t.work
	if m == nil || !t.isPending(*m) {
		t.work = nil
		return Ready{}
	}
	if !ok {
		return t.failWork(ReasonVerify, problems)
	}
	return Ready{Actions: []Action{{Kind: ActPrepare, Agent: m.Agent, Move: m.Move, Epoch: m.Epoch,
		Blobs: m.Blobs, Manifest: m.Manifest, Journal: m.Journal, Stopped: m.Stopped}}}
}

func (t *Target) prepared(ok bool, problems []string) Ready {
	m := t.work
	if m == nil || !t.isPending(*m) {
		t.work = nil
		return Ready{}
	}
	if !ok {
		return t.failWork(ReasonPrepare, problems)
	}
	t.work = nil
	t.st.Pending.Phase = PhasePrepared
	r := Ready{Records: []Record{t.record(RecPrepared)}}
	return r.merge(t.reply(*m, MsgPrepared, ""))
}

// failWork aborts the pending move after a failed verify or prepare and
// refuses the Prepare request with the problems.
func (t *Target) failWork(why Reason, problems []string) Ready {
	m := *t.work
	t.work = nil
	r := t.abortPending(fmt.Sprintf("%s: %v", why, problems))
	rep := t.reply(m, MsgRefused, why)
	rep.Messages[0].Problems = problems
	return r.merge(rep)
}

// abortPending aborts the pending move: ABORTED is durable before the
// staging is discarded and before any reply. The epoch stays burned
// (MaxEpoch already covers it).
func (t *Target) abortPending(note string) Ready {
	_ = note
	p := t.st.Pending
	t.st.Pending = nil
	t.work = nil
	t.remember(p.Move, p.Epoch, ResolvedAborted)
	return Ready{Records: []Record{t.record(RecAborted)},
		Actions: []Action{{Kind: ActDiscard, Agent: t.st.Agent, Move: p.Move, Epoch: p.Epoch}}}
}

// activate commits a prepared move: HOLDER is durable before the agent
// starts and before the reply. Anything else is refused and changes nothing.
func (t *Target) activate(m Message) Ready {
	if t.isPending(m) && t.st.Pending.Phase == PhasePrepared && t.work == nil {
		p := t.st.Pending
		t.st.Pending = nil
		t.st.Holder = p.Epoch
		t.st.MaxEpoch = max(t.st.MaxEpoch, p.Epoch)
		t.remember(p.Move, p.Epoch, ResolvedCommitted)
		r := Ready{Records: []Record{t.record(RecHolder)},
			Actions: []Action{{Kind: ActStart, Agent: t.st.Agent, Move: p.Move, Epoch: p.Epoch, Stopped: m.Stopped}}}
		return r.merge(t.reply(m, MsgActivated, ""))
	}
	if t.isPending(m) {
		return t.reply(m, MsgRefused, ReasonNotPrepared)
	}
	if h, ok := t.ended(m.Move); ok {
		if h.Result == ResolvedCommitted && h.Epoch == m.Epoch {
			return t.reply(m, MsgActivated, "")
		}
		return t.reply(m, MsgRefused, ReasonAborted)
	}
	return t.refuseUnknown(m)
}

// resolve is the fence after a lost activate reply: it aborts a pending
// move (prepared or not) and burns its epoch before it answers, so a late
// activate is refused.
func (t *Target) resolve(m Message) Ready {
	if h, ok := t.ended(m.Move); ok && h.Epoch == m.Epoch {
		r := t.reply(m, MsgResolved, "")
		r.Messages[0].Resolution = h.Result
		return r
	}
	var r Ready
	switch {
	case t.isPending(m):
		r = t.abortPending("resolved")
	case m.Epoch > t.st.MaxEpoch:
		r = t.burn(m)
	default:
		rep := t.reply(m, MsgResolved, "")
		rep.Messages[0].Resolution = ResolvedUnknown
		return rep
	}
	rep := t.reply(m, MsgResolved, "")
	rep.Messages[0].Resolution = ResolvedAborted
	return r.merge(rep)
}

// burn records an epoch this target never promised as used, so nothing at
// that epoch can be accepted later.
func (t *Target) burn(m Message) Ready {
	t.st.MaxEpoch = m.Epoch
	t.remember(m.Move, m.Epoch, ResolvedAborted)
	return Ready{Records: []Record{t.record(RecBurned)}}
}

// abort cleans up a move that never activated. It never touches an
// active holder.
func (t *Target) abort(m Message) Ready {
	if h, ok := t.ended(m.Move); ok {
		if h.Result == ResolvedCommitted {
			return t.reply(m, MsgRefused, ReasonActive)
		}
		return t.reply(m, MsgAborted, "")
	}
	var r Ready
	switch {
	case t.isPending(m):
		r = t.abortPending("aborted by the source")
	case m.Epoch > t.st.MaxEpoch:
		r = t.burn(m)
	}
	return r.merge(t.reply(m, MsgAborted, ""))
}

// adopt makes this node the holder at epoch outside a move (a new agent,
// an import, an operator force). An epoch not above MaxEpoch is ignored.
func (t *Target) adopt(epoch uint64) Ready {
	if epoch <= t.st.MaxEpoch {
		return Ready{}
	}
	var r Ready
	if t.st.Pending != nil {
		r = t.abortPending("adopted at a newer epoch")
		r.Records = nil
	}
	t.st.MaxEpoch, t.st.Holder = epoch, epoch
	r.persist(t.record(RecAdopted))
	return r
}

// release records that this node's own source committed a move at epoch:
// it no longer holds the agent.
func (t *Target) release(move string, epoch uint64) Ready {
	if t.st.Holder == 0 || epoch <= t.st.Holder {
		return Ready{}
	}
	t.st.Holder = 0
	t.st.MaxEpoch = max(t.st.MaxEpoch, epoch)
	_ = move
	return Ready{Records: []Record{t.record(RecReleased)}}
}
