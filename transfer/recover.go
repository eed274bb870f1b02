package transfer

import "fmt"

// RecoverTarget rebuilds a Target from its durable records (the last
// target record wins; records of sources are skipped). A move that was
// being verified or prepared when the node stopped is back to promised: a
// retried MsgPrepare runs the actions again.
func RecoverTarget(records []Record) (*Target, error) {
	for i := len(records) - 1; i >= 0; i-- {
		if st := records[i].Target; st != nil {
			t := &Target{st: *st}
			t.st = t.State() // deep copy
			return t, nil
		}
	}
	return nil, fmt.Errorf("recover target: %w", ErrNoRecord)
}

// RecoverSource rebuilds a Source from its durable records (the last
// source record wins) and returns what the host must do now:
//
//   - MIGRATING (stopped before the point of no return): roll back —
//     ROLLED_BACK, resume at the old epoch, and MsgAbort to clean the
//     target's staging;
//   - ACTIVATE_SENT: resolve (MsgResolve); never resume on its own;
//   - ROLLED_BACK: resume and send MsgAbort again (idempotent);
//   - RETIRED: ActRetire again (idempotent), outcome committed;
//   - STALE: stay frozen, outcome stale;
//   - FORCED: ActResume at the forced epoch again.
//
// cfg supplies what records do not hold (Policy, Retries, AbortRetries);
// its identifiers are ignored.
func RecoverSource(records []Record, cfg SourceConfig) (*Source, Ready, error) {
	var st *SourceState
	for i := len(records) - 1; i >= 0 && st == nil; i-- {
		st = records[i].Source
	}
	if st == nil {
		return nil, Ready{}, fmt.Errorf("recover source: %w", ErrNoRecord)
	}
	cfg = cfg.withDefaults()
	cfg.Agent, cfg.Move, cfg.Self, cfg.Peer = st.Agent, st.Move, st.Self, st.Peer
	cfg.Holder, cfg.Epoch = st.Holder, st.Epoch
	s := &Source{cfg: cfg, st: *st}
	return s, s.restart(), nil
}

func (s *Source) restart() Ready {
	resume := Action{Kind: ActResume, Agent: s.st.Agent, Move: s.st.Move, Epoch: s.st.Holder}
	switch s.st.Phase {
	case RecMigrating:
		s.phase = sPreparing // anything before the point of no return
		prev := s.clone()
		r := s.rollback("recovered before the point of no return", true)
		s.undo, s.last = prev, &r
		return r
	case RecActivateSent:
		s.outcome = OutcomeWaiting
		r := s.resolve()
		r.Outcome = OutcomeWaiting
		return r
	case RecRolledBack:
		s.outcome = OutcomeRolledBack
		s.phase = sAborting
		r := s.request(s.msg(MsgAbort))
		r.Actions, r.Outcome = []Action{resume}, OutcomeRolledBack
		return r
	case RecRetired:
		s.phase, s.outcome = sCommitted, OutcomeCommitted
		return Ready{Actions: []Action{{Kind: ActRetire, Agent: s.st.Agent, Move: s.st.Move, Epoch: s.st.Epoch, Peer: s.st.Peer}},
			Outcome: OutcomeCommitted}
	case RecStale:
		s.phase, s.outcome = sStale, OutcomeStale
		return Ready{Outcome: OutcomeStale}
	case RecForced:
		s.phase, s.outcome = sForced, OutcomeForced
		resume.Epoch = s.st.Resumed
		return Ready{Actions: []Action{resume}, Outcome: OutcomeForced}
	}
	s.phase = sAbandoned
	return Ready{}
}
