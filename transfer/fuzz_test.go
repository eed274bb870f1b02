package transfer

import (
	"fmt"
	"testing"
)

// FuzzTargetStep feeds a target arbitrary sequences of requests, action
// results, failed persists and restarts (requests come from the network:
// outside input) and checks the target's safety properties after each:
// MaxEpoch never decreases (also across a restart from the records), the
// holder changes only by an activate of the prepared pending move (or an
// adopt/release, and an adopt only above MaxEpoch), every state change comes with a record, a request gets
// at most one reply, and a refused activate never starts the agent.
func FuzzTargetStep(f *testing.F) {
	f.Add([]byte{0x10, 0x21, 0x02, 0x03, 0x31})
	f.Add([]byte{0x10, 0x21, 0x02, 0x03, 0x41, 0x31, 0x51})
	f.Add([]byte{0x10, 0x21, 0x02, 0x07, 0x31, 0x10, 0x60, 0x31})
	f.Add([]byte{0xcc, 0x60, 0xc0, 0xcc}) // adopt at 8, restart, adopt at 5 and 8 again: both ignored
	f.Fuzz(func(t *testing.T, ops []byte) {
		tg := NewTarget(agentID, "b")
		var recs []Record
		lastRecords = 0
		for i, op := range ops {
			before := tg.State()
			in, desc := decodeOp(op)
			if in.Kind == "restart" {
				lastRecords = 0
				if len(recs) > 0 {
					r, err := RecoverTarget(recs)
					if err != nil {
						t.Fatalf("op %d: recover: %v", i, err)
					}
					if r.MaxEpoch() != tg.MaxEpoch() || r.Holder() != tg.Holder() {
						t.Fatalf("op %d: recovered max/holder %d/%d, had %d/%d", i, r.MaxEpoch(), r.Holder(), tg.MaxEpoch(), tg.Holder())
					}
					tg = r
				}
				continue
			}
			rd := tg.Step(in)
			if in.Kind == InPersistFailed {
				recs = recs[:max(0, len(recs)-lastRecords)]
				lastRecords = 0
				continue
			}
			lastRecords = len(rd.Records)
			recs = append(recs, rd.Records...)
			checkTargetStep(t, i, desc, before, tg.State(), rd)
			if in.Kind == InAdopt && in.Epoch <= before.MaxEpoch && len(rd.Records) > 0 {
				t.Fatalf("op %d (%s): adopted at epoch %d, not above MaxEpoch %d", i, desc, in.Epoch, before.MaxEpoch)
			}
		}
	})
}

// lastRecords is how many records the previous step produced (undone by
// an InPersistFailed). Fuzz functions run sequentially per process.
var lastRecords int

func checkTargetStep(t *testing.T, i int, desc string, before, after TargetState, rd Ready) {
	t.Helper()
	if after.MaxEpoch < before.MaxEpoch {
		t.Fatalf("op %d (%s): MaxEpoch went back %d -> %d", i, desc, before.MaxEpoch, after.MaxEpoch)
	}
	changed := after.MaxEpoch != before.MaxEpoch || after.Holder != before.Holder ||
		fmt.Sprint(after.Pending) != fmt.Sprint(before.Pending)
	if changed && len(rd.Records) == 0 && !isVolatile(before, after) {
		t.Fatalf("op %d (%s): state changed without a record: %+v -> %+v", i, desc, before, after)
	}
	if len(rd.Messages) > 1 {
		t.Fatalf("op %d (%s): %d replies", i, desc, len(rd.Messages))
	}
	for _, a := range rd.Actions {
		if a.Kind == ActStart && (len(rd.Records) == 0 || rd.Records[0].Kind != RecHolder) {
			t.Fatalf("op %d (%s): agent started without a HOLDER record", i, desc)
		}
	}
	if after.Holder != before.Holder && after.Holder != 0 {
		if before.Pending == nil || before.Pending.Phase != PhasePrepared || before.Pending.Epoch != after.Holder {
			if len(rd.Records) == 0 || rd.Records[0].Kind != RecAdopted {
				t.Fatalf("op %d (%s): holder %d -> %d without activating a prepared move", i, desc, before.Holder, after.Holder)
			}
		}
	}
}

// isVolatile: only the volatile verify/prepare progress changed.
func isVolatile(before, after TargetState) bool {
	return before.MaxEpoch == after.MaxEpoch && before.Holder == after.Holder
}

// decodeOp turns one byte into an input: the high nibble picks the kind,
// the low nibble the move (m0..m3) and epoch (1..4).
func decodeOp(op byte) (Input, string) {
	move := fmt.Sprintf("m%d", op&3)
	epoch := uint64(op>>2&3) + 1
	kinds := []MsgType{MsgOffer, MsgPrepare, MsgActivate, MsgResolve, MsgAbort, MsgHave}
	switch k := op >> 4; {
	case k < 6:
		in := req(kinds[k], move, epoch)
		return in, fmt.Sprintf("%s %s@%d", kinds[k], move, epoch)
	case k == 6:
		return Input{Kind: "restart"}, "restart"
	case k == 7:
		return Input{Kind: InVerified, OK: true}, "verified ok"
	case k == 8:
		return Input{Kind: InVerified, Problems: []string{"bad"}}, "verified bad"
	case k == 9:
		return Input{Kind: InPrepared, OK: true}, "prepared ok"
	case k == 10:
		return Input{Kind: InPrepared, Problems: []string{"bad"}}, "prepared bad"
	case k == 11:
		return Input{Kind: InPersistFailed}, "persist failed"
	case k == 12:
		return Input{Kind: InAdopt, Epoch: epoch + 4}, "adopt"
	case k == 13:
		return Input{Kind: InRelease, Epoch: epoch + 8}, "release"
	}
	return Input{Kind: InTick}, "tick"
}
