package transfer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func req(t MsgType, move string, epoch uint64) Input {
	return Receive(Message{Type: t, Agent: agentID, Move: move, Epoch: epoch, From: "a", To: "b"})
}

// reply returns the one reply of rd, or a zero message.
func onlyReply(t *testing.T, rd Ready) Message {
	t.Helper()
	if len(rd.Messages) != 1 {
		t.Fatalf("got %d messages, want 1: %+v", len(rd.Messages), rd.Messages)
	}
	return rd.Messages[0]
}

// prepared returns a target with move m1 at epoch 2 prepared.
func preparedTarget(t *testing.T) *Target {
	tg := NewTarget(agentID, "b")
	tg.Step(req(MsgOffer, "m1", 2))
	tg.Step(req(MsgPrepare, "m1", 2))
	tg.Step(Input{Kind: InVerified, OK: true})
	rd := tg.Step(Input{Kind: InPrepared, OK: true})
	if got := onlyReply(t, rd).Type; got != MsgPrepared {
		t.Fatalf("setup: got %s", got)
	}
	return tg
}

// TestTargetAnswers checks each request against each target state
// (PROTOCOL §6, rules R1-R7).
func TestTargetAnswers(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(t *testing.T) *Target
		in         Input
		wantType   MsgType
		wantReason Reason
		wantRes    Resolution
		wantRecord RecordKind // "" = no record
		wantMax    uint64
		wantHolder uint64
	}{
		{"offer to a fresh target is promised", fresh, req(MsgOffer, "m1", 2), MsgPromise, "", "", RecPromised, 2, 0},
		{"duplicate offer gets the promise again without a record", promised, req(MsgOffer, "m1", 2), MsgPromise, "", "", "", 2, 0},
		{"offer at the pending epoch from another move is stale", promised, req(MsgOffer, "m9", 2), MsgRefused, ReasonStale, "", "", 2, 0},
		{"offer below the pending epoch is stale", promised, req(MsgOffer, "m9", 1), MsgRefused, ReasonStale, "", "", 2, 0},
		{"newer offer supersedes a prepared move", preparedTarget, req(MsgOffer, "m2", 3), MsgPromise, "", "", RecPromised, 3, 0},
		{"offer to the holder is refused", holder, req(MsgOffer, "m5", 9), MsgRefused, ReasonHolder, "", "", 2, 2},
		{"activate of a prepared move commits", preparedTarget, req(MsgActivate, "m1", 2), MsgActivated, "", "", RecHolder, 2, 2},
		{"activate of a promised move is refused", promised, req(MsgActivate, "m1", 2), MsgRefused, ReasonNotPrepared, "", "", 2, 0},
		{"duplicate activate after commit is answered again", holder, req(MsgActivate, "m1", 2), MsgActivated, "", "", "", 2, 2},
		{"activate after resolve-abort is refused", resolvedAborted, req(MsgActivate, "m1", 2), MsgRefused, ReasonAborted, "", "", 2, 0},
		{"activate of an unknown old move is stale", promised, req(MsgActivate, "m0", 1), MsgRefused, ReasonStale, "", "", 2, 0},
		{"resolve of a prepared move aborts and burns", preparedTarget, req(MsgResolve, "m1", 2), MsgResolved, "", ResolvedAborted, RecAborted, 2, 0},
		{"resolve of an activated move says committed", holder, req(MsgResolve, "m1", 2), MsgResolved, "", ResolvedCommitted, "", 2, 2},
		{"resolve of a never-seen newer epoch burns it", fresh, req(MsgResolve, "m1", 4), MsgResolved, "", ResolvedAborted, RecBurned, 4, 0},
		{"resolve of a forgotten older move is unknown", promised, req(MsgResolve, "m0", 1), MsgResolved, "", ResolvedUnknown, "", 2, 0},
		{"abort of an active move is refused", holder, req(MsgAbort, "m1", 2), MsgRefused, ReasonActive, "", "", 2, 2},
		{"abort of a pending move aborts", promised, req(MsgAbort, "m1", 2), MsgAborted, "", "", RecAborted, 2, 0},
		{"duplicate abort is answered again", resolvedAborted, req(MsgAbort, "m1", 2), MsgAborted, "", "", "", 2, 0},
		{"prepare while verifying is busy", verifying, req(MsgPrepare, "m1", 2), MsgRefused, ReasonBusy, "", "", 2, 0},
		{"prepare of an aborted move is refused", resolvedAborted, req(MsgPrepare, "m1", 2), MsgRefused, ReasonAborted, "", "", 2, 0},
		{"message for another node is refused", fresh, Receive(Message{Type: MsgOffer, Agent: agentID, Move: "m1", Epoch: 2, From: "a", To: "c"}), MsgRefused, ReasonMismatch, "", "", 0, 0},
		{"message for another agent is refused", fresh, Receive(Message{Type: MsgOffer, Agent: "other", Move: "m1", Epoch: 2, From: "a", To: "b"}), MsgRefused, ReasonMismatch, "", "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := tt.setup(t)
			rd := tg.Step(tt.in)
			got := onlyReply(t, rd)
			if got.Type != tt.wantType || got.Reason != tt.wantReason || got.Resolution != tt.wantRes {
				t.Errorf("reply = %s/%s/%s, want %s/%s/%s", got.Type, got.Reason, got.Resolution, tt.wantType, tt.wantReason, tt.wantRes)
			}
			var kinds []RecordKind
			for _, r := range rd.Records {
				kinds = append(kinds, r.Kind)
			}
			var want []RecordKind
			if tt.wantRecord != "" {
				want = []RecordKind{tt.wantRecord}
			}
			if diff := cmp.Diff(want, kinds); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if tg.MaxEpoch() != tt.wantMax || tg.Holder() != tt.wantHolder {
				t.Errorf("max, holder = %d, %d; want %d, %d", tg.MaxEpoch(), tg.Holder(), tt.wantMax, tt.wantHolder)
			}
			if got.Re != tt.in.Msg.Type || got.Move != tt.in.Msg.Move || got.Epoch != tt.in.Msg.Epoch {
				t.Errorf("reply does not name its request: re=%s move=%s epoch=%d", got.Re, got.Move, got.Epoch)
			}
		})
	}
}

func fresh(*testing.T) *Target { return NewTarget(agentID, "b") }

func promised(*testing.T) *Target {
	tg := NewTarget(agentID, "b")
	tg.Step(req(MsgOffer, "m1", 2))
	return tg
}

func verifying(*testing.T) *Target {
	tg := promised(nil)
	tg.Step(req(MsgPrepare, "m1", 2))
	return tg
}

func holder(t *testing.T) *Target {
	tg := preparedTarget(t)
	tg.Step(req(MsgActivate, "m1", 2))
	return tg
}

func resolvedAborted(t *testing.T) *Target {
	tg := preparedTarget(t)
	tg.Step(req(MsgResolve, "m1", 2))
	return tg
}

// TestTargetPersistFailedUndoes checks that a failed persist leaves the
// target as it was: no promise is kept that was never durable.
func TestTargetPersistFailedUndoes(t *testing.T) {
	tg := NewTarget(agentID, "b")
	tg.Step(req(MsgOffer, "m1", 2))
	tg.Step(Input{Kind: InPersistFailed})
	if tg.MaxEpoch() != 0 || tg.Pending() != nil {
		t.Fatalf("after a failed persist: max=%d pending=%+v, want 0 and nil", tg.MaxEpoch(), tg.Pending())
	}
}

// TestRecoverTarget rebuilds a target from its last record only.
func TestRecoverTarget(t *testing.T) {
	tg := NewTarget(agentID, "b")
	var recs []Record
	for _, in := range []Input{req(MsgOffer, "m1", 2), req(MsgPrepare, "m1", 2), {Kind: InVerified, OK: true}, {Kind: InPrepared, OK: true}} {
		recs = append(recs, tg.Step(in).Records...)
	}
	got, err := RecoverTarget(recs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tg.State(), got.State()); diff != "" {
		t.Errorf("recovered state (-want +got):\n%s", diff)
	}
	if _, err := RecoverTarget(nil); err == nil {
		t.Error("RecoverTarget(nil) succeeded")
	}
}

// TestAdoptOnlyAboveMaxEpoch: a node becomes the holder outside a move
// (InAdopt) only at an epoch above every epoch it has seen; an adopt at or
// below MaxEpoch (an old backup re-adopting the agent, a force that did not
// pick a new epoch) changes nothing and writes nothing (PROTOCOL §2,
// MaxEpoch never decreases; §9.2).
func TestAdoptOnlyAboveMaxEpoch(t *testing.T) {
	burned := func(*testing.T) *Target { // MaxEpoch 5, not holder
		tg := NewTarget(agentID, "b")
		tg.Step(req(MsgResolve, "m1", 5))
		return tg
	}
	tests := []struct {
		name       string
		setup      func(t *testing.T) *Target
		epoch      uint64
		wantRecord bool
		wantMax    uint64
		wantHolder uint64
	}{
		{"new agent", fresh, 1, true, 1, 1},
		{"above a burned epoch", burned, 6, true, 6, 6},
		{"at a burned epoch", burned, 5, false, 5, 0},
		{"below a burned epoch", burned, 3, false, 5, 0},
		{"below a promise", promised, 1, false, 2, 0},
		{"at the holder's epoch", holder, 2, false, 2, 2},
		{"below a prepared move", preparedTarget, 2, false, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := tt.setup(t)
			before := tg.State()
			rd := tg.Step(Input{Kind: InAdopt, Epoch: tt.epoch})
			if got := len(rd.Records) > 0; got != tt.wantRecord {
				t.Errorf("records %+v, want a record: %v", rd.Records, tt.wantRecord)
			}
			if tg.MaxEpoch() != tt.wantMax || tg.Holder() != tt.wantHolder {
				t.Errorf("max, holder = %d, %d; want %d, %d", tg.MaxEpoch(), tg.Holder(), tt.wantMax, tt.wantHolder)
			}
			if !tt.wantRecord {
				if diff := cmp.Diff(before, tg.State()); diff != "" {
					t.Errorf("a refused adopt changed the state (-before +after):\n%s", diff)
				}
			}
		})
	}
}

// TestIntentTravelsToTheActions: the operator's intent a prepare or an
// activate carries (Message.Stopped) reaches ActPrepare and ActStart, and
// a message of an older sender, without the field, means running
// (PROTOCOL §4).
func TestIntentTravelsToTheActions(t *testing.T) {
	stopped := func(in Input) Input { in.Msg.Stopped = true; return in }
	tg := promised(nil)
	tg.Step(stopped(req(MsgPrepare, "m1", 2)))
	rd := tg.Step(Input{Kind: InVerified, OK: true})
	if len(rd.Actions) != 1 || rd.Actions[0].Kind != ActPrepare || !rd.Actions[0].Stopped {
		t.Fatalf("verified: %+v, want ActPrepare with Stopped", rd.Actions)
	}
	tg.Step(Input{Kind: InPrepared, OK: true})
	rd = tg.Step(stopped(req(MsgActivate, "m1", 2)))
	if len(rd.Actions) != 1 || rd.Actions[0].Kind != ActStart || !rd.Actions[0].Stopped {
		t.Fatalf("activate: %+v, want ActStart with Stopped", rd.Actions)
	}
	var old Message
	if err := json.Unmarshal([]byte(`{"type":"activate","agent":"ag1","move":"m1","epoch":2,"from":"a","to":"b"}`), &old); err != nil || old.Stopped {
		t.Errorf("an older sender's activate: %+v, %v; want running", old, err)
	}
	if b, _ := json.Marshal(Message{Type: MsgActivate}); strings.Contains(string(b), "stopped") {
		t.Errorf("a running agent's activate carries %s; the field must be absent, as older senders send it", b)
	}
}
