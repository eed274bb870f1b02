package transfer

import (
	"errors"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/google/go-cmp/cmp"
)

func newTestSource(t *testing.T, rounds int) *Source {
	t.Helper()
	s, err := NewSource(SourceConfig{Agent: agentID, Move: "m1", Self: "a", Peer: "b", Holder: 1, Epoch: 2,
		Policy: Policy{MaxRounds: rounds}, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func replyTo(s *Source, typ MsgType) Input {
	out := *s.out
	return Receive(Message{Type: typ, Agent: out.Agent, Move: out.Move, Epoch: out.Epoch, From: out.To, To: out.From, Re: out.Type})
}

// offering returns a source that has frozen and sent its offer.
func offering(t *testing.T) *Source {
	s := newTestSource(t, 0)
	s.Step(Input{Kind: InStart, Inventory: &Inventory{}})
	s.Step(Input{Kind: InFrozen, OK: true, Inventory: &Inventory{}})
	return s
}

func activating(t *testing.T) *Source {
	s := offering(t)
	s.Step(replyTo(s, MsgPromise))
	s.Step(replyTo(s, MsgPrepared))
	return s
}

// TestSourceTransitions checks each source state against what may happen
// to it (PROTOCOL §7.1).
func TestSourceTransitions(t *testing.T) {
	refused := func(reason Reason, holder, max uint64) func(s *Source) Input {
		return func(s *Source) Input {
			in := replyTo(s, MsgRefused)
			in.Msg.Reason, in.Msg.Holder, in.Msg.MaxEpoch = reason, holder, max
			return in
		}
	}
	lost := func(*Source) Input { return Input{Kind: InSendFailed} }
	tests := []struct {
		name        string
		setup       func(t *testing.T) *Source
		in          func(s *Source) Input
		wantRecord  RecordKind
		wantSend    MsgType
		wantOutcome Outcome
		wantPhase   string
	}{
		{"promise leads to prepare", offering, func(s *Source) Input { return replyTo(s, MsgPromise) }, "", MsgPrepare, "", "preparing"},
		{"lost offer is resent", offering, lost, "", MsgOffer, "", "offering"},
		{"stale refusal makes a zombie", offering, refused(ReasonStale, 0, 3), RecStale, "", OutcomeStale, "stale"},
		{"holder at a newer epoch makes a zombie", offering, refused(ReasonHolder, 5, 5), RecStale, "", OutcomeStale, "stale"},
		{"holder at an older epoch rolls back", offering, refused(ReasonHolder, 1, 1), RecRolledBack, MsgAbort, OutcomeRolledBack, "aborting"},
		{"lost activate resolves, never resumes", activating, lost, "", MsgResolve, "", "resolving"},
		{"refused activate resolves, never resumes", activating, refused(ReasonNotPrepared, 0, 2), "", MsgResolve, "", "resolving"},
		{"activated retires", activating, func(s *Source) Input { return replyTo(s, MsgActivated) }, RecRetired, "", OutcomeCommitted, "committed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.setup(t)
			rd := s.Step(tt.in(s))
			var rec RecordKind
			if len(rd.Records) > 0 {
				rec = rd.Records[0].Kind
			}
			var sent MsgType
			if len(rd.Messages) > 0 {
				sent = rd.Messages[0].Type
			}
			got := []string{string(rec), string(sent), string(rd.Outcome), s.Phase()}
			want := []string{string(tt.wantRecord), string(tt.wantSend), string(tt.wantOutcome), tt.wantPhase}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("record, sent, outcome, phase (-want +got):\n%s", diff)
			}
			for _, a := range rd.Actions {
				if a.Kind == ActResume && s.State().Phase == RecActivateSent {
					t.Error("resumed after ACTIVATE_SENT")
				}
			}
		})
	}
}

// TestSourceRetryBudget: before the point of no return the source gives
// up after Retries attempts and rolls back; after it, it resolves forever.
func TestSourceRetryBudget(t *testing.T) {
	s := offering(t)
	s.Step(Input{Kind: InSendFailed})
	rd := s.Step(Input{Kind: InSendFailed})
	if rd.Outcome != OutcomeRolledBack || s.State().Phase != RecRolledBack {
		t.Fatalf("after 2 lost offers: outcome %q phase %s, want rolled back", rd.Outcome, s.State().Phase)
	}
	s = activating(t)
	s.Step(Input{Kind: InSendFailed}) // lost activate → resolve
	for i := 0; i < 50; i++ {
		s.Step(Input{Kind: InSendFailed})
		rd := s.Step(Input{Kind: InTick})
		if len(rd.Messages) != 1 || rd.Messages[0].Type != MsgResolve {
			t.Fatalf("tick %d: got %+v, want a resend of resolve", i, rd.Messages)
		}
	}
	if s.Outcome() != OutcomeWaiting || !s.Frozen() {
		t.Errorf("outcome %q frozen %v, want waiting and frozen", s.Outcome(), s.Frozen())
	}
}

// TestSourcePersistFailed: a failed MIGRATING abandons the move with the
// agent still running; a failed ACTIVATE_SENT rolls back (activate was
// never sent); a failed RETIRED is retried on the next tick.
func TestSourcePersistFailed(t *testing.T) {
	s := newTestSource(t, 0)
	s.Step(Input{Kind: InStart, Inventory: &Inventory{}})
	rd := s.Step(Input{Kind: InPersistFailed})
	if rd.Outcome != OutcomeRolledBack || s.Frozen() || len(rd.Actions) != 0 {
		t.Errorf("failed MIGRATING: %+v frozen=%v", rd, s.Frozen())
	}

	s = offering(t)
	s.Step(replyTo(s, MsgPromise))
	s.Step(replyTo(s, MsgPrepared)) // ACTIVATE_SENT + activate
	rd = s.Step(Input{Kind: InPersistFailed})
	if len(rd.Records) == 0 || rd.Records[0].Kind != RecRolledBack {
		t.Errorf("failed ACTIVATE_SENT: got %+v, want ROLLED_BACK", rd.Records)
	}

	s = activating(t)
	s.Step(replyTo(s, MsgActivated))
	if rd := s.Step(Input{Kind: InPersistFailed}); !rd.Empty() {
		t.Errorf("failed RETIRED: got %+v, want nothing until the next tick", rd)
	}
	if !s.Frozen() || s.Done() {
		t.Error("a source whose RETIRED is not durable must stay frozen and not done")
	}
	rd = s.Step(Input{Kind: InTick})
	if len(rd.Records) != 1 || rd.Records[0].Kind != RecRetired {
		t.Errorf("tick after failed RETIRED: got %+v", rd.Records)
	}
}

// TestRecoverSource: each last record leads to the documented restart
// (PROTOCOL §7.1, "Recovery").
func TestRecoverSource(t *testing.T) {
	tests := []struct {
		phase       RecordKind
		wantRecord  RecordKind
		wantSend    MsgType
		wantAction  ActionKind
		wantOutcome Outcome
		wantFrozen  bool
	}{
		{RecMigrating, RecRolledBack, MsgAbort, ActResume, OutcomeRolledBack, false},
		{RecActivateSent, "", MsgResolve, "", OutcomeWaiting, true},
		{RecRolledBack, "", MsgAbort, ActResume, OutcomeRolledBack, false},
		{RecRetired, "", "", ActRetire, OutcomeCommitted, true},
		{RecStale, "", "", "", OutcomeStale, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			st := SourceState{Agent: agentID, Move: "m1", Self: "a", Peer: "b", Holder: 1, Epoch: 2, Phase: tt.phase}
			s, rd, err := RecoverSource([]Record{{Kind: tt.phase, Agent: agentID, Source: &st}}, SourceConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var got [4]string
			if len(rd.Records) > 0 {
				got[0] = string(rd.Records[0].Kind)
			}
			if len(rd.Messages) > 0 {
				got[1] = string(rd.Messages[0].Type)
			}
			if len(rd.Actions) > 0 {
				got[2] = string(rd.Actions[0].Kind)
			}
			got[3] = string(rd.Outcome)
			want := [4]string{string(tt.wantRecord), string(tt.wantSend), string(tt.wantAction), string(tt.wantOutcome)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("record, send, action, outcome (-want +got):\n%s", diff)
			}
			if s.Frozen() != tt.wantFrozen {
				t.Errorf("Frozen() = %v, want %v", s.Frozen(), tt.wantFrozen)
			}
		})
	}
	if _, _, err := RecoverSource(nil, SourceConfig{}); !errors.Is(err, ErrNoRecord) {
		t.Errorf("RecoverSource(nil) = %v, want ErrNoRecord", err)
	}
}

func TestSourceConfigValidate(t *testing.T) {
	ok := SourceConfig{Agent: agentID, Move: "m", Self: "a", Peer: "b", Holder: 1, Epoch: 2}
	bad := []func(c *SourceConfig){
		func(c *SourceConfig) { c.Agent = "" },
		func(c *SourceConfig) { c.Peer = "a" },
		func(c *SourceConfig) { c.Holder = 0 },
		func(c *SourceConfig) { c.Epoch = 1 },
	}
	if _, err := NewSource(ok); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for i, f := range bad {
		c := ok
		f(&c)
		if _, err := NewSource(c); !errors.Is(err, ErrConfig) {
			t.Errorf("case %d: err = %v, want ErrConfig", i, err)
		}
	}
}

func TestPolicyAndEpochs(t *testing.T) {
	p := Policy{MaxRounds: 3, SmallBytes: 100}
	tests := []struct {
		round int
		want  int64
		cont  bool
	}{{1, 1000, true}, {1, 100, false}, {2, 1000, true}, {3, 1000, false}}
	for _, tt := range tests {
		if got := p.Continue(tt.round, tt.want); got != tt.cont {
			t.Errorf("Continue(%d, %d) = %v, want %v", tt.round, tt.want, got, tt.cont)
		}
	}
	if got := NextEpoch(3, 7, 5); got != 8 {
		t.Errorf("NextEpoch(3, 7, 5) = %d, want 8", got)
	}
}

// TestCheckStartAndMayRun: one move at a time, and no run while frozen.
func TestCheckStartAndMayRun(t *testing.T) {
	tg := NewTarget(agentID, "a")
	if err := CheckStart(tg, nil); !errors.Is(err, ErrNotHolder) {
		t.Errorf("CheckStart without holding = %v", err)
	}
	tg.Step(Input{Kind: InAdopt, Epoch: 1})
	if err := CheckStart(tg, nil); err != nil {
		t.Errorf("CheckStart as holder = %v", err)
	}
	s := offering(t)
	if err := CheckStart(tg, s); !errors.Is(err, ErrMoveInProgress) {
		t.Errorf("CheckStart during a move = %v", err)
	}
	if _, ok := MayRun(tg, s); ok {
		t.Error("MayRun while the source is frozen")
	}
	s.Step(Input{Kind: InSendFailed})
	s.Step(Input{Kind: InSendFailed}) // rolled back, aborting
	if e, ok := MayRun(tg, s); !ok || e != 1 {
		t.Errorf("MayRun after rollback = %d, %v", e, ok)
	}
}

// TestSourceAbortGivesUp: after a rollback the source retries the abort
// AbortRetries times (default DefaultAbortRetries), then stops, so a new
// move is possible even if the old target is gone for good.
func TestSourceAbortGivesUp(t *testing.T) {
	s, err := NewSource(SourceConfig{Agent: agentID, Move: "m1", Self: "a", Peer: "b", Holder: 1, Epoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(Input{Kind: InStart, Inventory: &Inventory{}})
	s.Step(Input{Kind: InFrozen, OK: true, Inventory: &Inventory{}})
	for range DefaultRetries {
		s.Step(Input{Kind: InSendFailed}) // offers lost: rolled back, aborting
	}
	if s.Phase() != "aborting" {
		t.Fatalf("phase %s, want aborting", s.Phase())
	}
	tg := NewTarget(agentID, "a")
	tg.Step(Input{Kind: InAdopt, Epoch: 1})
	for i := range DefaultAbortRetries {
		if err := CheckStart(tg, s); err == nil {
			t.Fatalf("attempt %d: a new move was allowed while the abort is pending", i)
		}
		s.Step(Input{Kind: InSendFailed})
	}
	if !s.Done() || CheckStart(tg, s) != nil {
		t.Errorf("after %d failed aborts: done=%v, CheckStart=%v", DefaultAbortRetries, s.Done(), CheckStart(tg, s))
	}
}

// TestSourceFrozenInEveryPhase pins when a source keeps the agent frozen
// (PROTOCOL §7.1, §7.3): from MIGRATING until a rollback or a force, and
// for ever once activate was sent (R5), retired or stale. A source that let
// the agent run while activating would run it beside the new holder.
func TestSourceFrozenInEveryPhase(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T) *Source
		in     []func(*Source) Input
		phase  string
		frozen bool
	}{
		{"idle", func(t *testing.T) *Source { return newTestSource(t, 1) }, nil, "idle", false},
		{"pre-copy have", precopying, nil, "have", false},
		{"pre-copy push", precopying, []func(*Source) Input{wantAll}, "push", false},
		{"freezing", func(t *testing.T) *Source {
			s := newTestSource(t, 0)
			s.Step(Input{Kind: InStart, Inventory: &Inventory{}})
			return s
		}, nil, "freezing", true},
		{"offering", offering, nil, "offering", true},
		{"preparing", offering, []func(*Source) Input{msg(MsgPromise)}, "preparing", true},
		{"activating", activating, nil, "activating", true},
		{"resolving", activating, []func(*Source) Input{lostRequest}, "resolving", true},
		{"waiting", activating, []func(*Source) Input{lostRequest, lostRequest}, "resolving", true},
		{"committed", activating, []func(*Source) Input{msg(MsgActivated)}, "committed", true},
		{"stale", offering, []func(*Source) Input{refusedWith(ReasonStale, 0, 5)}, "stale", true},
		{"aborting", offering, []func(*Source) Input{lostRequest, lostRequest}, "aborting", false},
		{"rolled back", offering, []func(*Source) Input{lostRequest, lostRequest, msg(MsgAborted)}, "rolled_back", false},
		{"forced", activating, []func(*Source) Input{lostRequest, force("alice", 0)}, "forced", false},
		{"abandoned", precopying, []func(*Source) Input{lostRequest, lostRequest}, "abandoned", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.setup(t)
			for _, in := range tt.in {
				s.Step(in(s))
			}
			tg := NewTarget(agentID, "a")
			tg.Step(Input{Kind: InAdopt, Epoch: 1})
			_, may := MayRun(tg, s)
			noReturn := tt.phase == "activating" || tt.phase == "resolving"
			got := []any{s.Phase(), s.Frozen(), may, s.PastNoReturn()}
			want := []any{tt.phase, tt.frozen, !tt.frozen, noReturn}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("phase, Frozen(), MayRun, PastNoReturn (-want +got):\n%s", diff)
			}
		})
	}
}

// precopying returns a source in its first pre-copy round (have sent).
func precopying(t *testing.T) *Source {
	s := newTestSource(t, 2)
	s.Step(Input{Kind: InStart, Inventory: &Inventory{Blobs: []Blob{{Digest: digest.FromString("b1"), Size: 10}}}})
	return s
}

func wantAll(s *Source) Input {
	in := replyTo(s, MsgWant)
	for _, b := range s.inv.Blobs {
		in.Msg.Want = append(in.Msg.Want, b.Digest)
	}
	return in
}

func lostRequest(*Source) Input { return Input{Kind: InSendFailed} }

func refusedWith(reason Reason, holder, max uint64) func(s *Source) Input {
	return func(s *Source) Input {
		in := replyTo(s, MsgRefused)
		in.Msg.Reason, in.Msg.Holder, in.Msg.MaxEpoch = reason, holder, max
		return in
	}
}

func resolvedWith(res Resolution, max uint64) func(s *Source) Input {
	return func(s *Source) Input {
		in := replyTo(s, MsgResolved)
		in.Msg.Resolution, in.Msg.MaxEpoch = res, max
		return in
	}
}

func force(operator string, min uint64) func(*Source) Input {
	return func(*Source) Input { return Input{Kind: InForce, Operator: operator, Epoch: min} }
}

// TestForceEpochAboveEverySeen: a forced resolve resumes at an epoch
// above every epoch the source knows: its offer, and every epoch a
// refusal or a resolution reported (PROTOCOL §9.2), also after a restart
// from the STALE record. Taking it from the offer alone would reuse an
// epoch the target already holds or burned.
func TestForceEpochAboveEverySeen(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T) *Source
		in      []func(*Source) Input
		min     uint64
		restart bool
		want    uint64
	}{
		{"from the offer alone", activating, []func(*Source) Input{lostRequest}, 0, false, 3},
		{"from the node's MaxEpoch", activating, []func(*Source) Input{lostRequest}, 6, false, 6},
		{"above a stale refusal", offering, []func(*Source) Input{refusedWith(ReasonStale, 0, 7)}, 0, false, 8},
		{"above a holder refusal", offering, []func(*Source) Input{refusedWith(ReasonHolder, 9, 9)}, 2, false, 10},
		{"above an unknown resolution", activating, []func(*Source) Input{lostRequest, resolvedWith(ResolvedUnknown, 11)}, 0, false, 12},
		{"above a refusal after a restart", offering, []func(*Source) Input{refusedWith(ReasonStale, 0, 7)}, 0, true, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.setup(t)
			var recs []Record
			for _, in := range tt.in {
				recs = append(recs, s.Step(in(s)).Records...)
			}
			if tt.restart {
				var err error
				if s, _, err = RecoverSource(recs, SourceConfig{}); err != nil {
					t.Fatal(err)
				}
			}
			rd := s.Step(force("alice", tt.min)(s))
			var got uint64
			for _, a := range rd.Actions {
				if a.Kind == ActResume {
					got = a.Epoch
				}
			}
			if got != tt.want || s.State().Resumed != tt.want {
				t.Errorf("forced resume at %d (state says %d), want %d", got, s.State().Resumed, tt.want)
			}
		})
	}
}

// TestOutcomeNotes: every outcome that is not a commit says why, and the
// reason names the deciding side's words: the transport's error for a lost
// request, the target's refusal with its epochs and problems.
func TestOutcomeNotes(t *testing.T) {
	lostWith := func(err string) func(*Source) Input {
		return func(*Source) Input { return Input{Kind: InSendFailed, Problems: []string{err}} }
	}
	verifyFailed := func(s *Source) Input {
		in := refusedWith(ReasonVerify, 0, 2)(s)
		in.Msg.From, in.Msg.Problems = "b", []string{"blob 1a2b: digest mismatch"}
		return in
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) *Source
		in    []func(*Source) Input
		want  string
	}{
		{"pre-copy unreachable", precopying, []func(*Source) Input{lostWith("connection refused"), lostWith("connection refused")},
			"have: no answer after 2 attempts: connection refused"},
		{"offer unreachable", offering, []func(*Source) Input{lostWith("tls: bad certificate"), lostWith("tls: bad certificate")},
			"offer: no answer after 2 attempts: tls: bad certificate"},
		{"pre-copy refused", precopying, []func(*Source) Input{refusedWith(ReasonHolder, 1, 1)},
			"have refused by b: holder (it holds the agent at epoch 1)"},
		{"verify failed", offering, []func(*Source) Input{msg(MsgPromise), verifyFailed},
			"prepare refused by b: verify_failed: blob 1a2b: digest mismatch"},
		{"stale", offering, []func(*Source) Input{refusedWith(ReasonStale, 0, 5)},
			"offer refused by b: stale_epoch (it has seen epoch 5)"},
		{"waiting", activating, []func(*Source) Input{lostWith("i/o timeout"), lostWith("i/o timeout")},
			"activate sent, its outcome unknown: resolving: i/o timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.setup(t)
			for _, in := range tt.in {
				s.Step(in(s))
			}
			if s.Outcome() == "" || s.Outcome() == OutcomeCommitted {
				t.Fatalf("outcome %q, want a failure", s.Outcome())
			}
			if got := s.State().Note; got != tt.want {
				t.Errorf("note = %q, want %q", got, tt.want)
			}
		})
	}
}

func msg(typ MsgType) func(*Source) Input { return func(s *Source) Input { return replyTo(s, typ) } }
