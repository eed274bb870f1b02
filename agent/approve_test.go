package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// An approval-required call parks the agent with a request that binds to
// the call; the wait comes back from the journal alone (a restarted or
// moved agent); an approval runs the tool once under a dispatch that
// names it.
func TestApprovalParksThenRunsOnce(t *testing.T) {
	b := newBook(t)
	x := newEffectBox(t, ApprovalRequired)
	openCalls(b, `{"n":1}`, "c1")
	var we *WaitingError
	if _, err := Step(context.Background(), effectEnv(b, x, nil)); !errors.As(err, &we) || we.CallID != "c1" {
		t.Fatalf("err %v, want waiting on c1", err)
	}
	req, reqID := lastOf[journal.ApprovalRequest](t, b, journal.KindApprovalRequest)
	want := journal.ApprovalRequest{CallID: "c1", Name: "bump", ArgumentsDigest: ArgumentsDigest(json.RawMessage(`{"n":1}`)),
		ToolDigest: ToolDigest(x.Tools()[0]), SpecDigest: SpecDigest([]byte(specA)), Rule: "tool bump requires approval"}
	if req != want {
		t.Fatalf("request\n got %+v\nwant %+v", req, want)
	}
	// A fresh step (a restart, a move's target) waits again and asks nothing new.
	for i := 0; i < 2; i++ {
		if _, err := Step(context.Background(), effectEnv(b, x, nil)); !errors.As(err, &we) || we.Request != reqID {
			t.Fatalf("err %v, want waiting on %s", err, reqID)
		}
	}
	if w, err := WaitingOn(b.events); err != nil || w == nil || w.CallID != "c1" || w.ArgumentsDigest != want.ArgumentsDigest {
		t.Fatalf("WaitingOn %+v %v", w, err)
	}
	if n := count(b, journal.KindApprovalRequest); n != 1 || x.bumps(t) != 0 {
		t.Fatalf("%d requests, %d bumps while waiting", n, x.bumps(t))
	}
	appr := decideCall(t, b, "c1", journal.DecisionApproved, "")
	if _, err := Step(context.Background(), effectEnv(b, x, nil)); err != nil {
		t.Fatal(err)
	}
	d, _ := lastOf[journal.ToolDispatch](t, b, journal.KindToolDispatch)
	if d.Approval != appr || d.Effect != journal.EffectExternal || d.ArgumentsDigest != want.ArgumentsDigest || d.ToolDigest != want.ToolDigest {
		t.Fatalf("dispatch %+v", d)
	}
	if r, _ := lastOf[journal.ToolResult](t, b, journal.KindToolResult); r.Content != "bumped" || x.bumps(t) != 1 {
		t.Fatalf("result %+v, %d bumps", r, x.bumps(t))
	}
	if w, _ := WaitingOn(b.events); w != nil {
		t.Fatalf("still waiting on %+v", w)
	}
	if _, err := CheckDecision(b.events, "c1", Binding{}); !isRefusal(err, RefuseConsumed) {
		t.Fatalf("deciding a consumed call: %v", err)
	}
	// Once the turn has moved on, the whole journal still says so.
	b.add(journal.KindAssistant, journal.AssistantMessage{Producer: simProducer, Step: "s2", Text: "done"})
	b.add(journal.KindUser, journal.UserMessage{Text: "next"})
	if _, err := CheckDecision(b.events, "c1", Binding{}); !isRefusal(err, RefuseConsumed) {
		t.Fatalf("deciding a consumed call of an older turn: %v", err)
	}
}

// A denial gives the model an error result with the reason; nothing runs.
func TestDenialAnswersWithTheReason(t *testing.T) {
	b := newBook(t)
	x := newEffectBox(t, ApprovalRequired)
	openCalls(b, `{"n":1}`, "c1")
	_, _ = Step(context.Background(), effectEnv(b, x, nil))
	decideCall(t, b, "c1", journal.DecisionDenied, "not on a Friday")
	if _, err := Step(context.Background(), effectEnv(b, x, nil)); err != nil {
		t.Fatal(err)
	}
	r, _ := lastOf[journal.ToolResult](t, b, journal.KindToolResult)
	if !r.IsError || !strings.Contains(r.Content, "denied by alice: not on a Friday") || x.bumps(t) != 0 || count(b, journal.KindToolDispatch) != 0 {
		t.Fatalf("result %+v, %d bumps", r, x.bumps(t))
	}
	if _, err := CheckDecision(b.events, "c1", Binding{}); !isRefusal(err, RefuseAlreadyDecided) {
		t.Fatalf("deciding a denied call again: %v", err)
	}
}

// An undescribed tool gets the narrowest values: external, approval required.
func TestUndescribedToolNeedsApproval(t *testing.T) {
	info := Describe(&box{}, "other")
	if info.Effect != journal.EffectExternal || info.Approval != ApprovalRequired || info.Digest != ToolDigest(declaration(nil, "other")) {
		t.Fatalf("info %+v", info)
	}
	if info := Describe(nil, "x"); info.Effect != journal.EffectExternal || info.Approval != ApprovalRequired {
		t.Fatalf("no toolbox: %+v", info)
	}
}

func isRefusal(err error, code string) bool {
	var re *RefusalError
	return errors.As(err, &re) && re.Code == code
}

// Each refusal code, when the decision is recorded (CheckDecision) and,
// where the case can arise there, again at dispatch (Step): a stale
// request is asked again, a duplicate or a consumed approval is refused
// with an error result; the tool never runs.
func TestApprovalRefusals(t *testing.T) {
	other := "sha256:" + strings.Repeat("0", 64)
	tests := []struct {
		code    string
		ids     []string
		setup   func(t *testing.T, b *book, x *effectBox) // after the first step asked for approval
		call    string                                    // the call decided ("" c1)
		now     Binding
		env     func(env *Env) // the dispatch step's env ("" no dispatch check)
		atStep  string         // what the dispatch step does: "ask" or "refuse"
		waiting bool
	}{
		{code: RefuseUnknownCall, call: "c9"},
		{code: RefuseAlreadyDecided, setup: func(t *testing.T, b *book, _ *effectBox) { decideCall(t, b, "c1", journal.DecisionApproved, "") }},
		{code: RefuseArgumentsChanged, now: Binding{Arguments: other}},
		{code: RefuseArgumentsChanged, setup: func(t *testing.T, b *book, _ *effectBox) {
			// a request that names other arguments than the call has, approved
			b.add(journal.KindApprovalRequest, journal.ApprovalRequest{CallID: "c1", Name: "bump", ArgumentsDigest: other, ToolDigest: other, SpecDigest: other})
		}, atStep: "ask"},
		{code: RefuseToolChanged, now: Binding{Tool: other}, atStep: "ask", env: func(env *Env) { env.Tools.(*effectBox).desc = "bump it twice" }},
		{code: RefuseSpecChanged, now: Binding{Spec: other}, atStep: "ask", env: func(env *Env) { env.SpecDigest = SpecDigest([]byte(specB)) }},
		{code: RefuseDuplicateCall, ids: []string{"c1", "c1"}, setup: func(t *testing.T, b *book, _ *effectBox) {
			b.add(journal.KindApprovalRequest, journal.ApprovalRequest{CallID: "c1", Name: "bump", ArgumentsDigest: ArgumentsDigest(json.RawMessage(`{"n":1}`)), ToolDigest: other, SpecDigest: other})
		}, atStep: "refuse"},
		{code: RefuseConsumed, ids: []string{"c1", "c2"}, setup: func(t *testing.T, b *book, x *effectBox) {
			// An older copy's dispatch of c2 named c1's approval.
			a := decideCall(t, b, "c1", journal.DecisionApproved, "")
			b.add(journal.KindToolDispatch, journal.ToolDispatch{CallID: "c2", Effect: journal.EffectExternal, ArgumentsDigest: other, ToolDigest: other, Approval: a})
		}, atStep: "refuse"},
	}
	for _, tc := range tests {
		t.Run(tc.code+"/"+tc.atStep, func(t *testing.T) {
			b := newBook(t)
			x := newEffectBox(t, ApprovalRequired)
			ids := tc.ids
			if ids == nil {
				ids = []string{"c1"}
			}
			openCalls(b, `{"n":1}`, ids...)
			if tc.code != RefuseDuplicateCall {
				if _, err := Step(context.Background(), effectEnv(b, x, nil)); !errors.Is(err, ErrWaiting) {
					t.Fatalf("first step: %v, want waiting", err)
				}
			}
			if tc.setup != nil {
				tc.setup(t, b, x)
			}
			call := tc.call
			if call == "" {
				call = "c1"
			}
			if _, err := CheckDecision(b.events, call, tc.now); !isRefusal(err, tc.code) {
				t.Fatalf("decision: %v, want %s", err, tc.code)
			}
			if tc.atStep == "" {
				return
			}
			if tc.code == RefuseArgumentsChanged || tc.code == RefuseToolChanged || tc.code == RefuseSpecChanged {
				// approve the request as it stands, then let what changed reach the dispatch
				req, id := lastOf[journal.ApprovalRequest](t, b, journal.KindApprovalRequest)
				b.add(journal.KindApproval, journal.Approval{CallID: req.CallID, Request: id, Decision: journal.DecisionApproved, By: "alice"})
			}
			env := effectEnv(b, x, nil)
			if tc.env != nil {
				tc.env(env)
			}
			requests := count(b, journal.KindApprovalRequest)
			_, err := Step(context.Background(), env)
			switch tc.atStep {
			case "ask":
				if !errors.Is(err, ErrWaiting) || count(b, journal.KindApprovalRequest) != requests+1 {
					t.Fatalf("dispatch step: %v, %d requests (had %d): want a new request", err, count(b, journal.KindApprovalRequest), requests)
				}
				req, _ := lastOf[journal.ApprovalRequest](t, b, journal.KindApprovalRequest)
				if req.ArgumentsDigest != ArgumentsDigest(json.RawMessage(`{"n":1}`)) || req.ToolDigest != ToolDigest(env.Tools.Tools()[0]) || req.SpecDigest != env.SpecDigest {
					t.Fatalf("new request %+v does not name what is in force", req)
				}
			case "refuse":
				r, _ := lastOf[journal.ToolResult](t, b, journal.KindToolResult)
				if err != nil || !r.IsError || !strings.Contains(r.Content, "refused ("+tc.code+")") {
					t.Fatalf("dispatch step: %v, result %+v", err, r)
				}
			}
			if x.bumps(t) != 0 || count(b, journal.KindToolDispatch) > 1 {
				t.Fatalf("%d bumps, %d dispatches: the tool ran", x.bumps(t), count(b, journal.KindToolDispatch))
			}
		})
	}
}

// A call of a tool the agent was not offered gets an error result at once:
// nothing runs, so nothing waits for approval.
func TestCallOfAnUnofferedToolIsAnswered(t *testing.T) {
	b := newBook(t)
	x := newEffectBox(t, ApprovalRequired)
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "go"})
	b.add(journal.KindToolCall, journal.ToolCall{CallID: "c1", Name: "rm_rf", Producer: simProducer, Step: "s1"})
	if _, err := Step(context.Background(), effectEnv(b, x, nil)); err != nil {
		t.Fatal(err)
	}
	r, _ := lastOf[journal.ToolResult](t, b, journal.KindToolResult)
	if !r.IsError || !strings.Contains(r.Content, `no tool "rm_rf"`) || count(b, journal.KindApprovalRequest) != 0 || count(b, journal.KindToolDispatch) != 0 {
		t.Fatalf("result %+v", r)
	}
}
