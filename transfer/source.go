package transfer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentcapsule/capsule/digest"
)

// srcPhase is a Source's fine-grained (volatile) phase. The durable phase
// is SourceState.Phase.
type srcPhase string

const (
	sIdle       srcPhase = "idle"        // created, not started
	sInventory  srcPhase = "inventory"   // pre-copy: waiting for InInventory
	sHave       srcPhase = "have"        // pre-copy: MsgHave sent
	sPush       srcPhase = "push"        // pre-copy: waiting for InPushed
	sFreezing   srcPhase = "freezing"    // MIGRATING durable, waiting for InFrozen
	sOffering   srcPhase = "offering"    // MsgOffer sent
	sPreparing  srcPhase = "preparing"   // MsgPrepare sent
	sActivating srcPhase = "activating"  // ACTIVATE_SENT durable, MsgActivate sent
	sResolving  srcPhase = "resolving"   // MsgResolve sent (after the point of no return)
	sAborting   srcPhase = "aborting"    // rolled back, MsgAbort sent (garbage collection)
	sCommitted  srcPhase = "committed"   // RETIRED
	sRolledBack srcPhase = "rolled_back" // ROLLED_BACK, nothing left to send
	sStale      srcPhase = "stale"       // STALE: frozen, an operator decides
	sForced     srcPhase = "forced"      // FORCED: resumed at a new epoch
	sAbandoned  srcPhase = "abandoned"   // gave up during pre-copy or before freezing
)

// Source is the source side of one move attempt: it freezes the agent,
// offers it to the peer, sends the delta, activates and retires — or rolls
// back. It is a pure state machine: see the package doc for how to drive it.
// A Source is not safe for concurrent use.
type Source struct {
	cfg      SourceConfig
	st       SourceState
	phase    srcPhase
	inv      Inventory // current (pre-copy) or frozen inventory
	round    int       // pre-copy round, 1-based
	wanted   int64     // bytes the last pre-copy round wanted
	attempts int       // failed attempts of the outstanding request or action
	out      *Message  // the outstanding request, for resending
	lastErr  string    // why the last attempt failed (InSendFailed's Problems), for notes
	outcome  Outcome
	// undo restores the state before the last Ready with records, in
	// case the host reports InPersistFailed.
	undo *Source
	// last is that Ready.
	last *Ready
	// retry is a Ready whose records failed to persist, re-issued on InTick.
	retry *Ready
}

// NewSource returns a Source for one move attempt. Start it with
// Step(Input{Kind: InStart, Inventory: ...}).
func NewSource(cfg SourceConfig) (*Source, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Source{cfg: cfg, phase: sIdle}
	s.st = SourceState{Agent: cfg.Agent, Move: cfg.Move, Self: cfg.Self, Peer: cfg.Peer, Holder: cfg.Holder, Epoch: cfg.Epoch}
	return s, nil
}

// State returns a copy of the source's durable state.
func (s *Source) State() SourceState { return s.st }

// Outcome returns the source's current verdict ("" while the move runs).
func (s *Source) Outcome() Outcome { return s.outcome }

// Phase returns a short name of the current phase, for status displays.
func (s *Source) Phase() string { return string(s.phase) }

// Done reports whether the source has nothing left to send or do.
func (s *Source) Done() bool {
	switch s.phase {
	case sCommitted, sRolledBack, sStale, sForced, sAbandoned:
		return s.retry == nil
	}
	return false
}

// Frozen reports whether the agent must not run on this node because of
// this source: from the MIGRATING record until a rollback or force, and
// for ever after it retired or was found stale.
func (s *Source) Frozen() bool {
	if s.retry != nil {
		return true
	}
	switch s.phase {
	case sIdle, sInventory, sHave, sPush, sAborting, sRolledBack, sForced, sAbandoned:
		return false
	}
	return true
}

// PastNoReturn reports whether the move is past its point of no return and
// not settled: ACTIVATE_SENT is the last durable record, so the target may
// run the agent at any moment (R5). The agent must not run here whatever
// else the node believes; only an answer, a resolve or an operator's force
// ends it. Frozen covers it; a node checks this too before an operator's
// start, so the rule holds even if the two were ever to disagree.
func (s *Source) PastNoReturn() bool { return s.st.Phase == RecActivateSent }

// Step feeds one input to the source and returns what the host must do.
func (s *Source) Step(in Input) Ready {
	prev := s.clone()
	var r Ready
	if in.Kind == InPersistFailed {
		r = s.persistFailed()
	} else {
		s.undo, s.last = nil, nil
		r = s.step(in)
	}
	if len(r.Records) > 0 {
		s.undo, s.last = prev, &r
	}
	return r
}

func (s *Source) clone() *Source {
	c := *s
	c.undo, c.last = nil, nil
	return &c
}

func (s *Source) step(in Input) Ready {
	switch in.Kind {
	case InStart:
		return s.start(in.Inventory)
	case InMessage:
		return s.receive(in.Msg)
	case InSendFailed:
		s.noteFailure(in.Problems)
		return s.sendFailed()
	case InTick:
		return s.tick()
	case InInventory:
		return s.inventory(in.Inventory)
	case InPushed:
		if !in.OK {
			s.noteFailure(in.Problems)
		}
		return s.pushed(in.OK)
	case InFrozen:
		return s.frozen(in)
	case InResolve:
		return s.operatorResolve()
	case InForce:
		return s.force(in.Operator, in.Epoch)
	}
	return Ready{}
}

// persistFailed handles records of the last Ready that could not be made
// durable (nothing else of that Ready happened). A failed MIGRATING
// abandons the move (the agent keeps running); a failed ACTIVATE_SENT rolls
// back (activate was never sent); any other Ready is re-issued whole on the
// next tick, and the agent stays frozen meanwhile.
func (s *Source) persistFailed() Ready {
	if s.undo == nil || s.last == nil {
		return Ready{}
	}
	failed, prev := *s.last, s.undo
	s.undo, s.last = nil, nil
	switch failed.Records[0].Kind {
	case RecMigrating:
		*s = *prev
		return s.abandon("could not persist MIGRATING")
	case RecActivateSent:
		*s = *prev
		return s.rollback("could not persist ACTIVATE_SENT", true)
	}
	s.retry = &failed
	return Ready{}
}

func (s *Source) record(kind RecordKind) Record {
	s.st.Phase = kind
	st := s.st
	return Record{Kind: kind, Agent: s.st.Agent, Source: &st}
}

func (s *Source) msg(t MsgType) Message {
	return Message{Type: t, Agent: s.st.Agent, Move: s.st.Move, Epoch: s.st.Epoch, From: s.st.Self, To: s.st.Peer}
}

// request sends m as the new outstanding request.
func (s *Source) request(m Message) Ready {
	s.out = &m
	s.attempts = 0
	return Ready{Messages: []Message{m}}
}

func (s *Source) start(inv *Inventory) Ready {
	if s.phase != sIdle {
		return Ready{}
	}
	if inv != nil {
		s.inv = *inv
	}
	if s.cfg.Policy.MaxRounds <= 0 {
		return s.freeze()
	}
	s.round = 1
	return s.have()
}

func (s *Source) have() Ready {
	s.phase = sHave
	m := s.msg(MsgHave)
	m.Epoch = 0
	m.Blobs = s.inv.Blobs
	m.Journal = s.inv.Journal
	return s.request(m)
}

func (s *Source) inventory(inv *Inventory) Ready {
	if s.phase != sInventory || inv == nil {
		return Ready{}
	}
	s.inv = *inv
	return s.have()
}

func (s *Source) want(m *Message) Ready {
	want := pick(s.inv.Blobs, m.Want)
	s.wanted = sumSizes(want)
	if len(want) == 0 && m.Have == s.inv.Journal {
		return s.freeze()
	}
	s.phase = sPush
	s.out, s.attempts = nil, 0
	return Ready{Actions: []Action{{Kind: ActPush, Agent: s.st.Agent, Move: s.st.Move, Peer: s.st.Peer,
		Blobs: want, JournalFrom: m.Have, Journal: s.inv.Journal}}}
}

func (s *Source) pushed(ok bool) Ready {
	if s.phase != sPush {
		return Ready{}
	}
	if !ok {
		s.attempts++
		if s.attempts >= s.cfg.Retries {
			return s.abandon(s.because(fmt.Sprintf("pre-copy push failed %d times", s.attempts)))
		}
		return s.freeze() // the frozen window carries what pre-copy could not
	}
	if s.cfg.Policy.Continue(s.round, s.wanted) {
		s.round++
		s.phase = sInventory
		return Ready{Actions: []Action{{Kind: ActInventory, Agent: s.st.Agent, Move: s.st.Move}}}
	}
	return s.freeze()
}

// abandon ends a move before MIGRATING: nothing durable to undo, the agent
// never stopped. note says why (it is kept in the state, not in a record).
func (s *Source) abandon(note string) Ready {
	s.st.Note = note
	s.phase = sAbandoned
	s.outcome = OutcomeRolledBack
	s.out = nil
	return Ready{Outcome: OutcomeRolledBack}
}

func (s *Source) freeze() Ready {
	s.phase = sFreezing
	s.out, s.attempts = nil, 0
	return Ready{Records: []Record{s.record(RecMigrating)},
		Actions: []Action{{Kind: ActFreeze, Agent: s.st.Agent, Move: s.st.Move, Epoch: s.st.Holder}}}
}

func (s *Source) frozen(in Input) Ready {
	if s.phase != sFreezing {
		return Ready{}
	}
	if !in.OK || in.Inventory == nil {
		return s.rollback(fmt.Sprintf("freeze: %v", in.Problems), false)
	}
	s.inv = *in.Inventory
	s.phase = sOffering
	m := s.msg(MsgOffer)
	m.Blobs, m.Manifest, m.Journal = s.inv.Blobs, s.inv.Manifest, s.inv.Journal
	return s.request(m)
}

// receive handles a reply. Replies for another move or epoch, or to a
// request other than the outstanding one, are late duplicates: ignored.
func (s *Source) receive(m *Message) Ready {
	if m == nil || s.out == nil || m.Move != s.st.Move || m.Agent != s.st.Agent || m.Re != s.out.Type {
		return Ready{}
	}
	if m.Epoch != s.out.Epoch {
		return Ready{}
	}
	s.st.Seen = max(s.st.Seen, m.MaxEpoch, m.Holder)
	switch {
	case m.Type == MsgRefused:
		return s.refused(m)
	case m.Type == MsgWant && s.phase == sHave:
		return s.want(m)
	case m.Type == MsgPromise && s.phase == sOffering:
		return s.promised(m)
	case m.Type == MsgPrepared && s.phase == sPreparing:
		return s.activate()
	case m.Type == MsgActivated && s.phase == sActivating:
		return s.retire("")
	case m.Type == MsgResolved && s.phase == sResolving:
		return s.resolved(m)
	case m.Type == MsgAborted && s.phase == sAborting:
		s.phase, s.out = sRolledBack, nil
		return Ready{}
	}
	return Ready{}
}

func (s *Source) promised(m *Message) Ready {
	s.phase = sPreparing
	p := s.msg(MsgPrepare)
	p.Blobs, p.Manifest, p.Journal = s.inv.Blobs, s.inv.Manifest, s.inv.Journal
	p.Send = pick(s.inv.Blobs, m.Want)
	p.JournalFrom = m.Have
	return s.request(p)
}

// activate crosses the point of no return: ACTIVATE_SENT is durable before
// MsgActivate leaves.
func (s *Source) activate() Ready {
	s.phase = sActivating
	r := s.request(s.msg(MsgActivate))
	r.Records = []Record{s.record(RecActivateSent)}
	return r
}

// retire ends a committed move; note says how it was learnt ("" for the
// activated reply).
func (s *Source) retire(note string) Ready {
	s.st.Note = note
	s.phase, s.out = sCommitted, nil
	s.outcome = OutcomeCommitted
	return Ready{Records: []Record{s.record(RecRetired)},
		Actions: []Action{{Kind: ActRetire, Agent: s.st.Agent, Move: s.st.Move, Epoch: s.st.Epoch, Peer: s.st.Peer}},
		Outcome: OutcomeCommitted}
}

func (s *Source) resolved(m *Message) Ready {
	switch m.Resolution {
	case ResolvedCommitted:
		return s.retire("resolve: the target had activated the move")
	case ResolvedAborted:
		return s.rollback("resolve: the target aborted the move", false)
	}
	return s.stale("resolve: the target no longer knows this move")
}

func (s *Source) refused(m *Message) Ready {
	note := refusalNote(m)
	switch {
	case s.phase == sActivating:
		return s.resolve() // only the fence may decide after activate was sent
	case s.phase == sResolving:
		return s.stale(note)
	case s.phase == sAborting:
		s.phase, s.out = sRolledBack, nil
		return Ready{}
	case m.Reason == ReasonBusy:
		s.lastErr = note
		return s.sendFailed()
	case m.Reason == ReasonStale || (m.Reason == ReasonHolder && m.Holder >= s.st.Epoch):
		if s.phase == sHave {
			return s.abandon(note)
		}
		return s.stale(note)
	case s.phase == sHave:
		return s.abandon(note)
	}
	return s.rollback(note, s.phase == sOffering || s.phase == sPreparing)
}

// rollback ends a move before the point of no return: ROLLED_BACK is
// durable, the agent resumes at its old epoch and, if the target may have
// staged anything, MsgAbort cleans it up (retried on ticks).
func (s *Source) rollback(note string, abort bool) Ready {
	s.st.Note = note
	s.st.Resumed = s.st.Holder
	s.outcome = OutcomeRolledBack
	r := Ready{Records: []Record{s.record(RecRolledBack)},
		Actions: []Action{{Kind: ActResume, Agent: s.st.Agent, Move: s.st.Move, Epoch: s.st.Holder}},
		Outcome: OutcomeRolledBack}
	if !abort {
		s.phase, s.out = sRolledBack, nil
		return r
	}
	s.phase = sAborting
	a := s.request(s.msg(MsgAbort))
	r.Messages = a.Messages
	return r
}

func (s *Source) stale(note string) Ready {
	s.st.Note = note
	s.phase, s.out = sStale, nil
	s.outcome = OutcomeStale
	return Ready{Records: []Record{s.record(RecStale)}, Outcome: OutcomeStale}
}

func (s *Source) resolve() Ready {
	s.phase = sResolving
	return s.request(s.msg(MsgResolve))
}

// sendFailed handles a lost request or reply. Before the point of no
// return the request is resent while the retry budget lasts, then the move
// rolls back. After it, only Resolve may decide: it is resent on ticks.
func (s *Source) sendFailed() Ready {
	if s.out == nil {
		return Ready{}
	}
	s.attempts++
	switch s.phase {
	case sActivating:
		return s.resolve()
	case sResolving:
		if s.outcome != OutcomeWaiting {
			s.outcome = OutcomeWaiting
			s.st.Note = s.because("activate sent, its outcome unknown: resolving")
			return Ready{Outcome: OutcomeWaiting}
		}
		return Ready{}
	case sAborting:
		if s.cfg.AbortRetries >= 0 && s.attempts >= s.cfg.AbortRetries {
			s.phase, s.out = sRolledBack, nil
		}
		return Ready{}
	case sHave:
		if s.attempts >= s.cfg.Retries {
			return s.abandon(s.because(fmt.Sprintf("%s: no answer after %d attempts", s.out.Type, s.attempts)))
		}
	default:
		if s.attempts >= s.cfg.Retries {
			return s.rollback(s.because(fmt.Sprintf("%s: no answer after %d attempts", s.out.Type, s.attempts)), true)
		}
	}
	return Ready{Messages: []Message{*s.out}}
}

// tick resends a Resolve or Abort waiting for an answer, and re-issues a
// Ready whose records failed to persist.
func (s *Source) tick() Ready {
	if s.retry != nil {
		r := *s.retry
		s.retry = nil
		return r
	}
	if s.out != nil && (s.phase == sResolving || s.phase == sAborting) {
		return Ready{Messages: []Message{*s.out}}
	}
	return Ready{}
}

func (s *Source) operatorResolve() Ready {
	switch s.phase {
	case sActivating, sResolving:
		s.attempts = 0
		return s.resolve()
	case sAborting:
		s.attempts = 0
		return Ready{Messages: []Message{*s.out}}
	}
	return Ready{}
}

// force resumes a waiting or stale source at a new epoch above every
// epoch known to it, recording the operator. This leaves the protocol's
// guarantee: see docs/PROTOCOL.md, "Operator override".
func (s *Source) force(operator string, min uint64) Ready {
	switch s.phase {
	case sActivating, sResolving, sStale:
	default:
		return Ready{}
	}
	e := max(NextEpoch(s.st.Epoch, s.st.Seen), min)
	s.st.Operator = operator
	s.st.Resumed = e
	s.st.Note = "forced by " + operator
	s.phase, s.out = sForced, nil
	s.outcome = OutcomeForced
	return Ready{Records: []Record{s.record(RecForced)},
		Actions: []Action{{Kind: ActResume, Agent: s.st.Agent, Move: s.st.Move, Epoch: e}},
		Outcome: OutcomeForced}
}

// pick returns the blobs of inv whose digests are in want, in inv's order.
func pick(inv []Blob, want []digest.Digest) []Blob {
	var out []Blob
	for _, b := range inv {
		if slices.Contains(want, b.Digest) {
			out = append(out, b)
		}
	}
	return out
}

// noteFailure remembers why the last attempt failed (the host's error
// text, e.g. a refused connection or a TLS error), for the notes.
func (s *Source) noteFailure(problems []string) {
	if len(problems) > 0 {
		s.lastErr = strings.Join(problems, "; ")
	}
}

// because appends the last failure's cause to note, when one is known.
func (s *Source) because(note string) string {
	if s.lastErr == "" {
		return note
	}
	return note + ": " + s.lastErr
}

// refusalNote says who refused which request, why, and with what epochs,
// so the operator reads the target's decision on the source side.
func refusalNote(m *Message) string {
	note := fmt.Sprintf("%s refused by %s: %s", m.Re, m.From, m.Reason)
	switch m.Reason {
	case ReasonStale:
		note += fmt.Sprintf(" (it has seen epoch %d)", m.MaxEpoch)
	case ReasonHolder:
		note += fmt.Sprintf(" (it holds the agent at epoch %d)", m.Holder)
	}
	if len(m.Problems) > 0 {
		note += ": " + strings.Join(m.Problems, "; ")
	}
	return note
}
