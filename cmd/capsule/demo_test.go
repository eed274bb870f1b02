package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// TestDemo runs the README's main command end to end on loopback: the
// agent fixes the bug with the file tools, its model changes API on A,
// it moves to B in its tool loop and finishes there, every request
// passed the simulator's rules, the external tool it calls on B waits
// for the demo's approval and runs once, and the capsule verifies on B.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	res, err := runDemo(t.Context(), t.TempDir(), &out)
	text := out.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if res.Move.Outcome != api.OutcomeCommitted || res.Move.FrozenMS <= 0 {
		t.Errorf("move = %+v", res.Move)
	}
	if !res.BugFixed {
		t.Errorf("calc.go in B's work folder is not fixed")
	}
	if res.TaskFinishedOn != "B" || res.AnsweredOn != "B" || !strings.Contains(res.Answer, "posted to the team channel (post 1)") {
		t.Errorf("last answer on %q: %q", res.AnsweredOn, res.Answer)
	}
	apis := map[string]bool{}
	for _, r := range res.Requests {
		apis[r.API] = true
	}
	if len(apis) < 2 || res.Refused != 0 {
		t.Errorf("requests %+v: want two APIs, none refused", res.Requests)
	}
	if len(res.Steps) != 2 || res.Steps[0].ToolSteps != 2 || !slices.Contains(res.Steps[1].Tools, "edit_file") ||
		!slices.Contains(res.Steps[1].Tools, "team.post") {
		t.Errorf("steps %+v: want search and read_file on A, edit_file and team.post on B", res.Steps)
	}
	if res.Move.CancelledModelCalls != 1 || res.CancelledInDelay != 1 {
		t.Errorf("the freeze cancelled %d model calls (%d held by the demo), want the one in flight", res.Move.CancelledModelCalls, res.CancelledInDelay)
	}
	if !res.Report.OK() || len(res.Report.Epochs) != 2 || len(res.Report.EventsByMachine) != 2 {
		t.Errorf("report = %+v", res.Report)
	}
	for _, want := range []string{"SIMULATOR", "not a language model", "the delay is the demo's", "Frozen window:", "(agent frozen)",
		"edit_file returned", "model switched to anthropic/messages", "anthropic/messages thinks (signed)", "A │", "B │"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo does not say %q:\n%s", want, text)
		}
	}
	checkTeamCall(t, res.Team, text)
	var sum int64
	for _, p := range res.Phases {
		sum += p.Bytes
	}
	if len(res.Phases) < 3 || sum != res.Move.BytesSent {
		t.Errorf("phases %+v sum to %d bytes, the move sent %d", res.Phases, sum, res.Move.BytesSent)
	}
}

// TestPhaseClock: progress events carry running totals of the phase the
// move is in; each phase gets what was sent between its start and the next.
func TestPhaseClock(t *testing.T) {
	var c phaseClock
	for _, p := range []api.MoveProgress{
		{Phase: api.PhasePrecopy},
		{Phase: api.PhasePrecopy, BytesSent: 100, BlobsSent: 2},
		{Phase: api.PhaseFreeze, BytesSent: 300, BlobsSent: 3},
		{Phase: api.PhasePrepare, BytesSent: 350, BlobsSent: 4, BlobsSkipped: 1},
		{Phase: api.PhaseDone, BytesSent: 360, BlobsSent: 4, BlobsSkipped: 1},
	} {
		c.observe(p)
	}
	want := []demoPhase{
		{Phase: api.PhasePrecopy, Bytes: 300, BlobsSent: 3},
		{Phase: api.PhaseFreeze, Bytes: 50, BlobsSent: 1, BlobsSkipped: 1},
		{Phase: api.PhasePrepare, Bytes: 10},
	}
	if diff := cmp.Diff(want, c.end(), cmpopts.IgnoreFields(demoPhase{}, "MS")); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
}

// TestInterruptedDemoLeavesNothing: SIGINT to a real `capsule demo` while
// its agent works stops it and removes its folders.
func TestInterruptedDemoLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	c, out := cliProcess(t, nil, "demo")
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	dir := waitFor(t, tmp, "capsule-demo-", done)
	waitFor(t, filepath.Join(tmp, dir), "workspace", done)
	_ = c.Process.Signal(syscall.SIGINT)
	if err := <-done; err == nil {
		t.Fatalf("the interrupted demo succeeded:\n%s", out)
	}
	if left := names(t, tmp); len(left) != 0 {
		t.Errorf("an interrupted demo left %v\n%s", left, out)
	}
}

// TestStepsByNode: a model step is one generation (its reasoning, text
// and calls share a step) counted on the machine that journaled it; a
// tool step is one tool result.
func TestStepsByNode(t *testing.T) {
	ev := func(machine string, kind journal.Kind, body string) journal.Event {
		return journal.Event{Machine: machine, Kind: kind, Body: []byte(body)}
	}
	oa := `"producer":{"provider":"openai","api":"chat","model":"m"}`
	an := `"producer":{"provider":"anthropic","api":"messages","model":"m"}`
	events := []journal.Event{
		ev("a", journal.KindUser, `{"text":"go"}`),
		ev("a", journal.KindToolCall, `{"call_id":"1","name":"search","step":"s1",`+oa+`}`),
		ev("a", journal.KindToolResult, `{"call_id":"1","name":"search","content":"x"}`),
		ev("b", journal.KindReasoning, `{"step":"s2","text":"t",`+an+`}`),
		ev("b", journal.KindToolCall, `{"call_id":"2","name":"edit_file","step":"s2",`+an+`}`),
		ev("b", journal.KindToolResult, `{"call_id":"2","name":"edit_file","content":"ok"}`),
		ev("b", journal.KindAssistant, `{"text":"done","step":"s3",`+an+`}`),
	}
	want := []demoSteps{
		{Node: "A", Machine: "a", ModelSteps: 1, ByModel: map[string]int{"openai/chat m": 1}, ToolSteps: 1, Tools: []string{"search"}},
		{Node: "B", Machine: "b", ModelSteps: 2, ByModel: map[string]int{"anthropic/messages m": 2}, ToolSteps: 1, Tools: []string{"edit_file"}},
	}
	if diff := cmp.Diff(want, stepsByNode(events, []string{"a", "b"}, []string{"A", "B"})); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// checkTeamCall: the transcript shows the team call's approval request,
// the demo's approval and exactly one dispatch, in that order, then its
// result; the channel got exactly one post; the journal holds one of each.
func checkTeamCall(t *testing.T, got demoTeamResult, text string) {
	t.Helper()
	want := demoTeamResult{Call: got.Call, Channel: []string{demoTeamMessage}, Posts: 1, FilePosts: 1,
		Requests: 1, Approvals: 1, Dispatches: 1, Results: 1}
	if diff := cmp.Diff(want, got); diff != "" || got.Call == "" {
		t.Errorf("team call (-want +got):\n%s", diff)
	}
	at := -1
	for _, line := range []string{
		"B │ approval_request: call " + got.Call + " (team.post) waits for a person's approval",
		"-- demo: approving call " + got.Call + " (team.post, arguments sha256:",
		"B │ approval: call " + got.Call + " approved by demo",
		"B │ tool_dispatch: call " + got.Call + " (team.post, effect external) dispatched",
		"B │   team.post returned: posted to the team channel (post 1)",
	} {
		i := strings.Index(text, line)
		if i <= at {
			t.Errorf("the transcript does not show %q after the line before it:\n%s", line, text)
		}
		at = max(at, i)
	}
	if n := strings.Count(text, "tool_dispatch: call "+got.Call); n != 1 {
		t.Errorf("the transcript shows %d dispatches of %s, want 1", n, got.Call)
	}
}

// TestCountCall counts one call's approval events, dispatches and
// results, and no other call's.
func TestCountCall(t *testing.T) {
	ev := func(kind journal.Kind, call string) journal.Event {
		return journal.Event{Kind: kind, Body: []byte(`{"call_id":"` + call + `"}`)}
	}
	events := []journal.Event{
		ev(journal.KindToolCall, "c1"),
		ev(journal.KindApprovalRequest, "c1"),
		ev(journal.KindApprovalRequest, "c2"),
		ev(journal.KindApproval, "c1"),
		ev(journal.KindToolDispatch, "c1"),
		ev(journal.KindToolDispatch, "c1"),
		ev(journal.KindToolDispatch, "c2"),
		ev(journal.KindToolResult, "c1"),
	}
	var got demoTeamResult
	countCall(events, "c1", &got)
	want := demoTeamResult{Requests: 1, Approvals: 1, Dispatches: 2, Results: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestDemoCheckTeam: the demo fails unless the channel got one post and
// the journal holds one approval request, approval and dispatch.
func TestDemoCheckTeam(t *testing.T) {
	ok := demoTeamResult{Call: "c", Posts: 1, FilePosts: 1, Requests: 1, Approvals: 1, Dispatches: 1, Results: 1}
	for _, tc := range []struct {
		name string
		edit func(*demoTeamResult)
		want string
	}{
		{"one of each", func(*demoTeamResult) {}, ""},
		{"two posts", func(r *demoTeamResult) { r.Posts = 2 }, "2 posts"},
		{"not in the file", func(r *demoTeamResult) { r.FilePosts = 0 }, "(0 in its file)"},
		{"two dispatches", func(r *demoTeamResult) { r.Dispatches = 2 }, "2 dispatches"},
		{"no approval", func(r *demoTeamResult) { r.Approvals = 0 }, "0 approvals"},
	} {
		r := demoResult{BugFixed: true, Team: ok}
		tc.edit(&r.Team)
		err := r.check()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: check() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A first progress report that comes after pre-copy ended still counts
// pre-copy's bytes in a phase of their own: the phases sum to the move.
func TestPhaseClockLatePrecopy(t *testing.T) {
	c := startClock()
	c.observe(api.MoveProgress{Phase: api.PhaseFreeze, BytesSent: 100})
	c.observe(api.MoveProgress{Phase: api.PhaseOffer, BytesSent: 150})
	c.observe(api.MoveProgress{Phase: api.PhaseDone, BytesSent: 150})
	got := c.end()
	if len(got) != 3 || got[0].Phase != api.PhasePrecopy || got[0].Bytes != 100 || got[1].Phase != api.PhaseFreeze ||
		got[0].Bytes+got[1].Bytes+got[2].Bytes != 150 {
		t.Fatalf("phases %+v", got)
	}
}
