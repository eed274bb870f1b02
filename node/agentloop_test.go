package node

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/vfs"
)

// Tests of the agent loop as the node runs it, with a scripted model
// client (the provider clients are tested against the embedded endpoint
// in provider/<name>) and a scripted tool.

// gate is a model client whose calls wait until released (or cancelled);
// each released call answers with the next scripted generation.
type gate struct {
	mu      sync.Mutex
	got     []provider.Request
	calls   chan struct{} // a call arrived
	release chan []provider.Output
}

func newGate() *gate {
	return &gate{calls: make(chan struct{}, 64), release: make(chan []provider.Output, 64)}
}

func (g *gate) Call(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	g.mu.Lock()
	g.got = append(g.got, *req)
	g.mu.Unlock()
	g.calls <- struct{}{}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case outs := <-g.release:
		resp := &provider.Response{Attempts: 1}
		for _, o := range outs {
			switch b := o.Body.(type) {
			case journal.AssistantMessage:
				b.Producer, b.Step = req.Producer, req.Step
				o.Body = b
			case journal.ToolCall:
				b.Producer, b.Step = req.Producer, req.Step
				o.Body = b
			}
			resp.Events = append(resp.Events, o)
		}
		return resp, nil
	}
}

func (g *gate) requests() []provider.Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]provider.Request(nil), g.got...)
}

func (g *gate) client(render.API) (provider.Client, error) { return g, nil }

func waitChan(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// slowTools offers one tool, "slow", that runs until released.
type slowTools struct {
	started chan struct{}
	release chan struct{}
	mu      sync.Mutex
	runs    int
}

func newSlowTools() *slowTools {
	return &slowTools{started: make(chan struct{}, 16), release: make(chan struct{}, 16)}
}

func (s *slowTools) Tools() []render.Tool {
	return []render.Tool{{Name: "slow", Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (s *slowTools) Run(ctx context.Context, name string, args json.RawMessage) agent.ToolOutput {
	s.mu.Lock()
	s.runs++
	s.mu.Unlock()
	s.started <- struct{}{}
	<-s.release
	return agent.ToolOutput{Content: "slow done"}
}

func (s *slowTools) open(string) (agent.Toolbox, io.Closer, error) { return s, io.NopCloser(nil), nil }

var planner = &api.ModelRef{Provider: "openai", API: "chat", Model: "capsule-sim/planner"}

func count(events []journal.Event, k journal.Kind) int {
	n := 0
	for _, e := range events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func waitActivity(t *testing.T, n *Node, id, activity string) api.AgentStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, err := n.Agent(context.Background(), id)
		if err == nil && st.Activity == activity {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, _ := n.Agent(context.Background(), id)
	t.Fatalf("agent %s never became %s: %+v", id, activity, st)
	return st
}

// A move that freezes the agent while its model call is in flight cancels
// the call (nothing of it is journaled), says so in the report, and the
// target makes the same call again and finishes the turn.
func TestFreezeCancelsModelCallAndTargetRepeatsIt(t *testing.T) {
	ga, gb := newGate(), newGate()
	cl := newCluster(t, nodeOpts{agentLoop: true, providers: ga.client, endpoint: "http://127.0.0.1:9"},
		nodeOpts{agentLoop: true, providers: gb.client, endpoint: "http://127.0.0.1:9"})
	a, b := cl.nodes[0], cl.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "say hello"})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, ga.calls, "the model call on A")
	res := move(t, a, b, st.ID)
	if res.Outcome != api.OutcomeCommitted || res.CancelledModelCalls != 1 {
		t.Fatalf("move: %+v", res)
	}
	waitChan(t, gb.calls, "the repeated call on B")
	gb.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "hello"}}}
	waitActivity(t, b, st.ID, activityIdle)
	ra, rb := ga.requests(), gb.requests()
	if ra[0].Step != rb[0].Step || string(ra[0].Body) != string(rb[0].Body) {
		t.Fatalf("the repeated call differs: step %s body %s, the cancelled one step %s body %s", rb[0].Step, rb[0].Body, ra[0].Step, ra[0].Body)
	}
	events := journalOf(t, b, st.ID)
	if count(events, journal.KindAssistant) != 1 || count(events, journal.KindUser) != 1 {
		t.Fatalf("journal on B: %d assistant, %d user events", count(events, journal.KindAssistant), count(events, journal.KindUser))
	}
}

// A freeze waits for a running tool up to the bound, then the move is
// refused with the reason and the tool goes on; once the tool is done the
// agent moves.
func TestFreezeWaitsForToolThenRefuses(t *testing.T) {
	g := newGate()
	tools := newSlowTools()
	opts := nodeOpts{agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9", tools: tools.open, toolWait: 100 * time.Millisecond}
	cl := newCluster(t, opts, nodeOpts{agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9", tools: tools.open})
	t.Cleanup(func() { close(tools.release) })
	a, b := cl.nodes[0], cl.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "use the slow tool"})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the first model call")
	g.release <- []provider.Output{{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "c1", Name: "slow", Arguments: json.RawMessage(`{}`)}}}
	waitChan(t, tools.started, "the tool")
	// Pre-copy does not wait for the tool; the freeze does, and refuses.
	res, err := a.Move(t.Context(), st.ID, api.MoveRequest{To: string(b.ID())}, nil)
	if err != nil || res.Outcome == api.OutcomeCommitted || !strings.Contains(res.Reason, "tool is still running") {
		t.Fatalf("move during the tool: %+v %v", res, err)
	}
	tools.release <- struct{}{}
	waitChan(t, g.calls, "the model call after the tool")
	if got := journalOf(t, a, st.ID); count(got, journal.KindToolResult) != 1 {
		t.Fatalf("%d tool results after the refused move", count(got, journal.KindToolResult))
	}
	res = move(t, a, b, st.ID)
	if res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move after the tool: %+v", res)
	}
	waitChan(t, g.calls, "the repeated call on B")
	g.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "done"}}}
	waitActivity(t, b, st.ID, activityIdle)
	if tools.runs != 1 {
		t.Fatalf("the tool ran %d times", tools.runs)
	}
}

// A node that loses power while a tool runs leaves its tool mark; the
// restarted node answers the call as interrupted (the tool does not run
// again) and the model is told in the next request.
func TestPowerLossDuringToolAnswersInterrupted(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaulty(mem)
	g := newGate()
	tools := newSlowTools()
	dir := filepath.Join(t.TempDir(), "n")
	opts := nodeOpts{fsys: ffs, agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9", tools: tools.open}
	n := newNode(t, dir, opts)
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "go"})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the model call")
	g.release <- []provider.Output{{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "c1", Name: "slow", Arguments: json.RawMessage(`{}`)}}}
	waitChan(t, tools.started, "the tool")
	mem.Crash()
	ffs.Fail(vfs.OpAny, "", vfs.ErrIO) // the dead machine writes nothing more
	tools.release <- struct{}{}
	n.Close(context.Background())
	ffs.OnOp(nil)
	ffs.Clear()

	g2, tools2 := newGate(), newSlowTools()
	n2 := newNode(t, dir, nodeOpts{fsys: mem, agentLoop: true, providers: g2.client, endpoint: "http://127.0.0.1:9", tools: tools2.open})
	t.Cleanup(func() { close(tools2.release) }) // before n2 closes: a tool run again must not hang the test
	waitChan(t, g2.calls, "the model call after the restart")
	if tools2.runs != 0 {
		t.Fatal("the interrupted tool ran again")
	}
	req := g2.requests()[0]
	if !strings.Contains(string(req.Body), "interrupted") {
		t.Fatalf("the model is not told: %s", req.Body)
	}
	g2.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "checked"}}}
	waitActivity(t, n2, st.ID, activityIdle)
	events := journalOf(t, n2, st.ID)
	if count(events, journal.KindToolCall) != 1 || count(events, journal.KindToolResult) != 1 {
		t.Fatalf("journal: %d calls, %d results", count(events, journal.KindToolCall), count(events, journal.KindToolResult))
	}
	a, _ := n2.getTenant(st.ID)
	if m, err := a.readToolMark(); err != nil || m.CallID != "" {
		t.Fatalf("mark after the interrupted result: %+v %v", m, err)
	}
}

// pairTools offers a slow tool, which waits for release, and a fast one;
// it counts the runs of each.
type pairTools struct {
	slow *slowTools
	mu   sync.Mutex
	fast int
}

func (p *pairTools) Tools() []render.Tool {
	return append(p.slow.Tools(), render.Tool{Name: "fast", Parameters: json.RawMessage(`{"type":"object"}`)})
}

func (p *pairTools) Run(ctx context.Context, name string, args json.RawMessage) agent.ToolOutput {
	if name == "slow" {
		return p.slow.Run(ctx, name, args)
	}
	p.mu.Lock()
	p.fast++
	p.mu.Unlock()
	return agent.ToolOutput{Content: "fast done"}
}

func (p *pairTools) open(string) (agent.Toolbox, io.Closer, error) { return p, io.NopCloser(nil), nil }

func (p *pairTools) fastRuns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fast
}

// A move asked for while the first of two calls of one model step runs
// does not wait for it in pre-copy; the freeze waits for it and lands
// right after its result, so the second call runs on the target, once
// (issue 13 req 8(c)).
func TestFreezeLandsBetweenToolSteps(t *testing.T) {
	g := newGate()
	ta, tb := &pairTools{slow: newSlowTools()}, &pairTools{slow: newSlowTools()}
	opts := func(p *pairTools) nodeOpts {
		return nodeOpts{agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9", tools: p.open, toolWait: 20 * time.Second}
	}
	cl := newCluster(t, opts(ta), opts(tb))
	t.Cleanup(func() { close(ta.slow.release); close(tb.slow.release) })
	a, b := cl.nodes[0], cl.nodes[1]
	freezing := make(chan struct{}, 1)
	a.hooks.beforeFreeze = func(string) { freezing <- struct{}{} }
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "use both tools"})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the first model call")
	g.release <- []provider.Output{
		{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "c1", Name: "slow", Arguments: json.RawMessage(`{}`)}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "c2", Name: "fast", Arguments: json.RawMessage(`{}`)}},
	}
	waitChan(t, ta.slow.started, "the slow tool")
	moved := make(chan api.MoveResult, 1)
	go func() { moved <- move(t, a, b, st.ID) }()
	waitChan(t, freezing, "the freeze, asked for while the slow tool runs")
	ta.slow.release <- struct{}{}
	if res := <-moved; res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move during the slow tool: %+v", res)
	}
	waitChan(t, g.calls, "the model call after both results, on B")
	g.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "done"}}}
	waitActivity(t, b, st.ID, activityIdle)
	events := journalOf(t, b, st.ID)
	by := map[string]string{}
	for _, e := range events {
		if e.Kind == journal.KindToolResult {
			var r journal.ToolResult
			if err := json.Unmarshal(e.Body, &r); err != nil {
				t.Fatal(err)
			}
			if by[r.CallID] != "" {
				t.Fatalf("call %s has two results", r.CallID)
			}
			by[r.CallID] = e.Machine
		}
	}
	if by["c1"] != string(a.ID()) || by["c2"] != string(b.ID()) {
		t.Fatalf("results of c1 by %q, c2 by %q; want c1 on A (%s), c2 on B (%s)", by["c1"], by["c2"], a.ID(), b.ID())
	}
	if ta.slow.runs != 1 || ta.fastRuns() != 0 || tb.fastRuns() != 1 || tb.slow.runs != 0 {
		t.Fatalf("runs: A slow %d fast %d, B slow %d fast %d", ta.slow.runs, ta.fastRuns(), tb.slow.runs, tb.fastRuns())
	}
}
