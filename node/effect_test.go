package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/vfs"
)

// The loop's own test tools describe themselves as workspace tools that
// need no approval (a tool a Toolbox does not describe needs approval).

func (p printTool) Info(name string) (agent.ToolInfo, bool) {
	return agent.ToolInfo{Name: name, Effect: journal.EffectWorkspace, Approval: agent.ApprovalNever}, true
}

func (s *slowTools) Info(name string) (agent.ToolInfo, bool) {
	return agent.ToolInfo{Name: name, Effect: journal.EffectWorkspace, Approval: agent.ApprovalNever}, true
}

func (p *pairTools) Info(name string) (agent.ToolInfo, bool) {
	return agent.ToolInfo{Name: name, Effect: journal.EffectWorkspace, Approval: agent.ApprovalNever}, true
}

// bumpTools offers "bump", an external tool that needs approval and
// appends a line to a counter file outside every workspace; hold, when
// set, keeps it running (after its effect) until released.
type bumpTools struct {
	counter string
	hold    bool
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBumpTools(t *testing.T, hold bool) *bumpTools {
	return &bumpTools{counter: filepath.Join(t.TempDir(), "counter"), hold: hold, started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *bumpTools) Tools() []render.Tool {
	return []render.Tool{{Name: "bump", Description: "deploy", Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (b *bumpTools) Info(name string) (agent.ToolInfo, bool) {
	return agent.ToolInfo{Name: name, Effect: journal.EffectExternal, Approval: agent.ApprovalRequired}, name == "bump"
}

func (b *bumpTools) Run(ctx context.Context, name string, args json.RawMessage) agent.ToolOutput {
	f, err := os.OpenFile(b.counter, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString("bump\n")
		f.Close()
	}
	if err != nil {
		return agent.ToolOutput{Content: err.Error(), IsError: true}
	}
	b.started <- struct{}{}
	if b.hold {
		<-b.release
	}
	return agent.ToolOutput{Content: "deployed"}
}

func (b *bumpTools) open(string) (agent.Toolbox, io.Closer, error) { return b, io.NopCloser(nil), nil }

func (b *bumpTools) bumps(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(b.counter)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

var bumpCall = []provider.Output{{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "c1", Name: "bump", Arguments: json.RawMessage(`{}`)}}}

// waitingOn waits until the agent on n waits for approval of call.
func waitingOn(t *testing.T, n *Node, id, call string) api.AgentStatus {
	t.Helper()
	st := waitActivity(t, n, id, activityWaiting)
	if len(st.Waiting) != 1 || st.Waiting[0].CallID != call || st.Waiting[0].Tool != "bump" || st.Waiting[0].ArgumentsDigest != agent.ArgumentsDigest(json.RawMessage(`{}`)) {
		t.Fatalf("status while waiting: %+v", st.Waiting)
	}
	return st
}

func reasonOf(err error) string {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// A call that needs approval parks the agent (status shows the call); the
// wait survives a node restart, comes back from the journal alone, and an
// approval runs the tool once; deciding again is refused with its code.
func TestApprovalWaitSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	g, tools := newGate(), newBumpTools(t, false)
	opts := nodeOpts{agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9", tools: tools.open}
	n := newNode(t, dir, opts)
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the model call")
	g.release <- bumpCall
	waitingOn(t, n, st.ID, "c1")
	n.Close(context.Background())

	g2 := newGate()
	n2 := newNode(t, dir, nodeOpts{agentLoop: true, providers: g2.client, endpoint: "http://127.0.0.1:9", tools: tools.open})
	waitingOn(t, n2, st.ID, "c1")
	if _, err := n2.Approve(t.Context(), st.ID, api.ApproveRequest{CallID: "c9", Decision: api.DecisionApproved, By: "alice"}); reasonOf(err) != agent.RefuseUnknownCall || !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("approving an unknown call: %v", err)
	}
	other := "sha256:" + strings.Repeat("1", 64)
	if _, err := n2.Approve(t.Context(), st.ID, api.ApproveRequest{CallID: "c1", Decision: api.DecisionApproved, By: "alice", ArgumentsDigest: other}); reasonOf(err) != agent.RefuseArgumentsChanged {
		t.Fatalf("approving other arguments: %v", err)
	}
	if _, err := n2.Approve(t.Context(), st.ID, api.ApproveRequest{CallID: "c1", Decision: api.DecisionApproved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitChan(t, g2.calls, "the model call after the tool")
	if _, err := n2.Approve(t.Context(), st.ID, api.ApproveRequest{CallID: "c1", Decision: api.DecisionApproved, By: "alice"}); reasonOf(err) == "" || !errors.Is(err, api.ErrConflict) {
		t.Fatalf("approving twice: %v", err)
	}
	g2.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "deployed"}}}
	waitActivity(t, n2, st.ID, activityIdle)
	events := journalOf(t, n2, st.ID)
	if tools.bumps(t) != 1 || count(events, journal.KindToolDispatch) != 1 || count(events, journal.KindApprovalRequest) != 1 || count(events, journal.KindApproval) != 1 {
		t.Fatalf("%d bumps; journal: %d dispatches, %d requests, %d approvals", tools.bumps(t), count(events, journal.KindToolDispatch), count(events, journal.KindApprovalRequest), count(events, journal.KindApproval))
	}
}

// An agent waiting for approval moves (freeze, transfer, prepare); the
// target waits on the same call from the journal alone, and an approval
// there runs the tool once.
func TestApprovalWaitSurvivesMove(t *testing.T) {
	ga, gb := newGate(), newGate()
	ta, tb := newBumpTools(t, false), newBumpTools(t, false)
	tb.counter = ta.counter // one outside world
	cl := newCluster(t, nodeOpts{agentLoop: true, providers: ga.client, endpoint: "http://127.0.0.1:9", tools: ta.open},
		nodeOpts{agentLoop: true, providers: gb.client, endpoint: "http://127.0.0.1:9", tools: tb.open})
	a, b := cl.nodes[0], cl.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, ga.calls, "the model call")
	ga.release <- bumpCall
	waitingOn(t, a, st.ID, "c1")
	if res := move(t, a, b, st.ID); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move while waiting: %+v", res)
	}
	waitingOn(t, b, st.ID, "c1")
	if _, err := a.Approve(t.Context(), st.ID, api.ApproveRequest{CallID: "c1", Decision: api.DecisionApproved, By: "alice"}); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("approving on the old holder: %v", err)
	}
	if _, err := b.Approve(t.Context(), st.ID, api.ApproveRequest{CallID: "c1", Decision: api.DecisionApproved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitChan(t, gb.calls, "the model call after the tool on B")
	if ta.bumps(t) != 1 {
		t.Fatalf("%d bumps", ta.bumps(t))
	}
}

// A node that loses power while an approved external tool runs (after its
// effect): the restarted node does not run it again, answers outcome
// unknown, and status shows the unresolved effect until an operator
// records it.
func TestPowerLossDuringExternalToolLeavesOutcomeUnknown(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaulty(mem)
	g, tools := newGate(), newBumpTools(t, true)
	dir := filepath.Join(t.TempDir(), "n")
	n := newNode(t, dir, nodeOpts{fsys: ffs, agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9", tools: tools.open})
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the model call")
	g.release <- bumpCall
	waitingOn(t, n, st.ID, "c1")
	if _, err := n.Approve(t.Context(), st.ID, api.ApproveRequest{CallID: "c1", Decision: api.DecisionApproved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitChan(t, tools.started, "the tool")
	mem.Crash()
	ffs.Fail(vfs.OpAny, "", vfs.ErrIO) // the dead machine writes nothing more
	close(tools.release)
	n.Close(context.Background())
	ffs.OnOp(nil)
	ffs.Clear()

	g2, tools2 := newGate(), newBumpTools(t, false)
	tools2.counter = tools.counter
	n2 := newNode(t, dir, nodeOpts{fsys: mem, agentLoop: true, providers: g2.client, endpoint: "http://127.0.0.1:9", tools: tools2.open})
	waitChan(t, g2.calls, "the model call after the restart")
	if tools.bumps(t) != 1 {
		t.Fatalf("%d bumps: the dispatched tool ran again", tools.bumps(t))
	}
	if req := g2.requests()[0]; !strings.Contains(string(req.Body), "outcome is unknown") {
		t.Fatalf("the model is not told: %s", req.Body)
	}
	g2.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "I will not retry"}}}
	st2 := waitActivity(t, n2, st.ID, activityIdle)
	if len(st2.Unresolved) != 1 || st2.Unresolved[0].CallID != "c1" {
		t.Fatalf("unresolved %+v", st2.Unresolved)
	}
	if _, err := n2.RecordEffect(t.Context(), st.ID, api.EffectRequest{CallID: "c2", Outcome: api.OutcomeDone, By: "alice"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("recording an unknown call: %v", err)
	}
	if _, err := n2.RecordEffect(t.Context(), st.ID, api.EffectRequest{CallID: "c1", Outcome: api.OutcomeDone, By: "alice", Note: "the deploy is live"}); err != nil {
		t.Fatal(err)
	}
	if st3, _ := n2.Agent(t.Context(), st.ID); len(st3.Unresolved) != 0 {
		t.Fatalf("still unresolved: %+v", st3.Unresolved)
	}
	if _, err := n2.RecordEffect(t.Context(), st.ID, api.EffectRequest{CallID: "c1", Outcome: api.OutcomeDone, By: "alice"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("recording twice: %v", err)
	}
}

// A failure after the dispatch is durable and before the tool starts (the
// record of the running tool cannot be written): the tool never runs,
// and the runner's next step answers the call outcome unknown, from the
// dispatch in the journal.
func TestFailureAfterDispatchNeverRunsTheTool(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaulty(mem)
	g, tools := newGate(), newBumpTools(t, false)
	n := newNode(t, filepath.Join(t.TempDir(), "n"), nodeOpts{fsys: ffs, agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9", tools: tools.open})
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the model call")
	g.release <- bumpCall
	waitingOn(t, n, st.ID, "c1")
	rule := ffs.Fail(vfs.OpRename, toolMarkFile, vfs.ErrIO)
	if _, err := n.Approve(t.Context(), st.ID, api.ApproveRequest{CallID: "c1", Decision: api.DecisionApproved, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the model call after the interrupted result")
	if rule.Hits() == 0 || tools.bumps(t) != 0 {
		t.Fatalf("fault hits %d, %d bumps", rule.Hits(), tools.bumps(t))
	}
	var r journal.ToolResult
	for _, e := range journalOf(t, n, st.ID) {
		if e.Kind == journal.KindToolResult {
			_ = json.Unmarshal(e.Body, &r)
		}
	}
	if !r.Interrupted || r.Outcome != journal.OutcomeUnknown {
		t.Fatalf("result %+v", r)
	}
	g.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "not retried"}}}
	if st := waitActivity(t, n, st.ID, activityIdle); len(st.Unresolved) != 1 {
		t.Fatalf("unresolved %+v", st.Unresolved)
	}
}
