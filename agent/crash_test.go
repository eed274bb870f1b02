package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// A crash at each point around the dispatch of an external call: the
// effect (a line in a counter file outside the workspace) happens at most
// once, and the journal says what is known. The restarted step has the
// journal alone (no node-local record of the running tool: a move never
// carries one).
func TestCrashAroundDispatch(t *testing.T) {
	tests := []struct {
		name     string
		approval string
		crash    func(env *Env, x *effectBox) // arms the crash on the first run's env
		bumps    int                          // effects after the restart
		unknown  bool                         // the restart answers outcome unknown
	}{
		{name: "before the dispatch is synced", crash: func(env *Env, _ *effectBox) { failOn(env, journal.KindToolDispatch) }, bumps: 1},
		{name: "after the dispatch, before the tool starts", crash: func(env *Env, _ *effectBox) {
			env.Enter = func(p Phase, _ string) error {
				if p == PhaseTool {
					return errCrash
				}
				return nil
			}
		}, unknown: true},
		{name: "during the tool", crash: duringTool, bumps: 1, unknown: true},
		{name: "after the tool, before its result", crash: func(env *Env, _ *effectBox) { failOn(env, journal.KindToolResult) }, bumps: 1, unknown: true},
		{name: "during an approved tool", approval: ApprovalRequired, crash: duringTool, bumps: 1, unknown: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBook(t)
			x := newEffectBox(t, tc.approval)
			openCalls(b, `{"n":1}`, "c1")
			if tc.approval == ApprovalRequired {
				_, _ = Step(context.Background(), effectEnv(b, x, nil))
				decideCall(t, b, "c1", journal.DecisionApproved, "")
			}
			env := effectEnv(b, x, nil)
			tc.crash(env, x)
			if _, err := Step(context.Background(), env); !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v, want the crash", err)
			}
			x.during = nil
			rep, err := Step(context.Background(), effectEnv(b, x, nil)) // the restart
			if err != nil {
				t.Fatal(err)
			}
			if got := x.bumps(t); got != tc.bumps {
				t.Fatalf("%d effects, want %d", got, tc.bumps)
			}
			r, _ := lastOf[journal.ToolResult](t, b, journal.KindToolResult)
			un, err := Unresolved(b.events)
			if err != nil {
				t.Fatal(err)
			}
			if tc.unknown {
				if rep.Action != Interrupted || !r.Interrupted || r.Outcome != journal.OutcomeUnknown || r.Content != OutcomeUnknownResult || !r.IsError {
					t.Fatalf("restart %s, result %+v: want outcome unknown", rep.Action, r)
				}
				if len(un) != 1 || un[0].CallID != "c1" || un[0].Tool != "bump" {
					t.Fatalf("unresolved %+v", un)
				}
				b.add(journal.KindEffectOutcome, journal.EffectOutcome{CallID: "c1", Outcome: journal.OutcomeDone, By: "alice", Note: "checked"})
				if un, _ := Unresolved(b.events); len(un) != 0 {
					t.Fatalf("still unresolved after effect_outcome: %+v", un)
				}
			} else if rep.Action != ToolStep || r.Content != "bumped" || len(un) != 0 {
				t.Fatalf("restart %s, result %+v, unresolved %+v: want the one run", rep.Action, r, un)
			}
			if n := count(b, journal.KindToolDispatch); n != 1 {
				t.Fatalf("%d dispatches, want 1", n)
			}
			if next, err := Decide(b.events, "", 0); err != nil || next.Action != ModelStep {
				t.Fatalf("after the restart: %v %v, want a model step", next.Action, err)
			}
		})
	}
}

// failOn makes the env's append of kind fail, as a crash before the
// write reached the disk.
func failOn(env *Env, kind journal.Kind) {
	next := env.Append
	env.Append = func(kinds []journal.Kind, bodies []any) error {
		if kinds[0] == kind {
			return errCrash
		}
		return next(kinds, bodies)
	}
}

// duringTool crashes the node while bump runs, after its effect: nothing
// is journaled from then on.
func duringTool(env *Env, x *effectBox) {
	crashed := false
	x.during = func() { crashed = true }
	next := env.Append
	env.Append = func(kinds []journal.Kind, bodies []any) error {
		if crashed {
			return errCrash
		}
		return next(kinds, bodies)
	}
}

// A read or workspace call cut by a crash (the node's record of the
// running tool) is interrupted without an unknown outcome and without a
// dispatch.
func TestInterruptedReadCallHasNoOutcome(t *testing.T) {
	b := newBook(t)
	x := newEffectBox(t, "")
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "go"})
	b.add(journal.KindToolCall, journal.ToolCall{CallID: "c1", Name: "look", Producer: simProducer, Step: "s1"})
	env := effectEnv(b, x, nil)
	env.Interrupted = "c1"
	if _, err := Step(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	r, _ := lastOf[journal.ToolResult](t, b, journal.KindToolResult)
	if !r.Interrupted || r.Outcome != "" || r.Content != InterruptedResult || count(b, journal.KindToolDispatch) != 0 {
		t.Fatalf("result %+v", r)
	}
}
