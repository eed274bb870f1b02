package render

import (
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/google/go-cmp/cmp"
)

// ev is an event of kind with body, for segmentation tests.
func ev(kind journal.Kind, body string) journal.Event {
	return journal.Event{Kind: kind, Body: []byte(body)}
}

// Issue 18 item 11: an instruction that arrives while the open step still
// waits for a result does not close the step: the call and its result
// stay one unit, and the instruction is placed after it.
func TestSegmentInstructionBetweenCallAndResult(t *testing.T) {
	prod := `"producer":{"provider":"openai","api":"chat","model":"gpt-4.1"},"step":"s1"`
	events := []journal.Event{
		ev(journal.KindUser, `{"text":"Read /a."}`),
		ev(journal.KindToolCall, `{"call_id":"c1","name":"read_file","arguments":{},`+prod+`}`),
		ev(journal.KindToolCall, `{"call_id":"c2","name":"read_file","arguments":{},`+prod+`}`),
		ev(journal.KindToolResult, `{"call_id":"c1","content":"A"}`),
		ev(journal.KindInstruction, `{"role":"developer","text":"Be brief."}`),
		ev(journal.KindToolResult, `{"call_id":"c2","content":"B"}`),
		ev(journal.KindUser, `{"text":"Thanks."}`),
	}
	g := segment(events)
	var kinds []unitKind
	for _, u := range g.units {
		kinds = append(kinds, u.kind)
	}
	if d := cmp.Diff([]unitKind{unitUser, unitStep, unitInstr, unitUser}, kinds); d != "" {
		t.Fatalf("units (-want +got):\n%s", d)
	}
	var results []int32
	for _, c := range g.callsOf(&g.units[1]) {
		results = append(results, c.result)
	}
	if d := cmp.Diff([]int32{3, 5}, results); d != "" {
		t.Errorf("the results of c1 and c2 (-want +got):\n%s", d)
	}
	if len(g.orphans) != 0 {
		t.Errorf("orphans %v: a result was split from its call", g.orphans)
	}
}
