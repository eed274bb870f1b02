package node

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
)

// End to end on the node with the real provider clients and workspace
// tools, against the embedded model endpoint (a simulator that enforces
// each provider's request rules and verifies the reasoning signatures it
// issued).

func startSim(t *testing.T) (*sim.Server, string) {
	t.Helper()
	s := sim.New(sim.Config{})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

func project(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("package main\n\n// TODO: greet the user\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// say journals a user message on the node that holds the agent and wakes it.
func say(t *testing.T, n *Node, id, text string) {
	t.Helper()
	appendAndWake(t, n, id, journal.KindUser, journal.UserMessage{Text: text})
}

func switchModel(t *testing.T, n *Node, id string, mc journal.ModelChange) {
	t.Helper()
	appendAndWake(t, n, id, journal.KindModelChange, mc)
}

func appendAndWake(t *testing.T, n *Node, id string, kind journal.Kind, body any) {
	t.Helper()
	a, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.log.Append(kind, a.holder.Holder(), n.wallTime(), body); err != nil {
		t.Fatal(err)
	}
	a.wake()
}

// waitAnswer waits until the agent answered a turn more than it had
// (before assistant texts ending a turn) and is idle again.
func waitAnswer(t *testing.T, n *Node, id string, before int) []journal.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st, err := n.Agent(t.Context(), id)
		if err == nil && st.Activity == activityIdle {
			if events := journalOf(t, n, id); count(events, journal.KindAssistant) > before {
				return events
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, _ := n.Agent(t.Context(), id)
	t.Fatalf("agent %s answered no new turn: %+v", id, st)
	return nil
}

// checkSim fails the test for every request the endpoint refused.
func checkSim(t *testing.T, s *sim.Server) {
	t.Helper()
	for _, r := range s.Requests() {
		if r.Status != 200 || len(r.Violations) > 0 {
			t.Errorf("request %d (%s %s) refused: %d %v", r.Seq, r.API, r.Model, r.Status, r.Violations)
		}
	}
}

func lastAssistant(t *testing.T, events []journal.Event) journal.AssistantMessage {
	t.Helper()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == journal.KindAssistant {
			var m journal.AssistantMessage
			if err := json.Unmarshal(events[i].Body, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatal("no assistant message")
	return journal.AssistantMessage{}
}

// The agent runs a tool loop with the workspace tools, its model is
// switched to another provider's API and back in the middle of a turn,
// it moves to a second node between turns, and every request the
// endpoint received passed its provider's rules.
func TestAgentOnSimulatorSwitchesAndMoves(t *testing.T) {
	s, url := startSim(t)
	cl := newCluster(t, nodeOpts{agentLoop: true, endpoint: url}, nodeOpts{agentLoop: true, endpoint: url})
	a, b := cl.nodes[0], cl.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "sim", From: project(t), Model: planner,
		Task: "Please read_file path=src/main.go, then search pattern=TODO."})
	if err != nil {
		t.Fatal(err)
	}
	id := st.ID
	waitActivity(t, a, id, activityIdle)
	events := journalOf(t, a, id)
	if count(events, journal.KindToolCall) < 2 || count(events, journal.KindToolResult) != count(events, journal.KindToolCall) {
		t.Fatalf("first turn: %d calls, %d results", count(events, journal.KindToolCall), count(events, journal.KindToolResult))
	}
	if m := lastAssistant(t, events); !strings.Contains(m.Text, "TODO") {
		t.Fatalf("the answer does not cite the tool results: %q", m.Text)
	}

	// Switch to Anthropic (thinking, signed) for a turn, then back.
	claude := journal.ModelChange{Provider: "anthropic", API: "messages", Model: sim.Planner}
	before := count(events, journal.KindAssistant)
	switchModel(t, a, id, claude)
	say(t, a, id, "Please read_file path=src/main.go again.")
	events = waitAnswer(t, a, id, before)
	if got := s.Received(render.Anthropic, sim.Planner); len(got) < 2 {
		t.Fatalf("anthropic got %d requests", len(got))
	}

	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	before = count(events, journal.KindAssistant)
	switchModel(t, b, id, journal.ModelChange{Provider: planner.Provider, API: planner.API, Model: planner.Model})
	say(t, b, id, "Please list_files path=src.")
	waitAnswer(t, b, id, before)
	checkSim(t, s)
	st, _ = b.Agent(t.Context(), id)
	if st.State != api.StateRunning || st.Blocked != "" {
		t.Fatalf("status on B: %+v", st)
	}
	events = journalOf(t, b, id)
	if m := lastAssistant(t, events); !strings.Contains(m.Text, "main.go") {
		t.Fatalf("the last answer does not cite list_files: %q", m.Text)
	}
}

// A request the provider refuses (here: a tool call the journal holds
// with a name the target API refuses is fine, so use a model the
// simulator does not serve) blocks the agent with the provider's message
// instead of retrying forever, and a model change unblocks it.
func TestRefusedRequestBlocksAgent(t *testing.T) {
	_, url := startSim(t)
	n := newNode(t, filepath.Join(t.TempDir(), "n"), nodeOpts{agentLoop: true, endpoint: url})
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "x", Model: &api.ModelRef{Provider: "openai", API: "chat", Model: "gpt-no-such-model"}, Task: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	got := waitActivity(t, n, st.ID, activityBlocked)
	if got.State != api.StateBlocked || !strings.Contains(got.Blocked, "refused") {
		t.Fatalf("status: %+v", got)
	}
	switchModel(t, n, st.ID, journal.ModelChange{Provider: "openai", API: "chat", Model: sim.Echo})
	if m := lastAssistant(t, waitAnswer(t, n, st.ID, 0)); !strings.Contains(m.Text, "hello") {
		t.Fatalf("echo: %q", m.Text)
	}
}

// Switching A -> B -> A: the first request to B carries no reasoning of
// A; back on A, everything A's last request before the switch held is
// sent again byte for byte (A's own reasoning items with their encrypted
// content included), followed by the turns since.
func TestSwitchBackReplaysOwnPartsByteIdentical(t *testing.T) {
	s, url := startSim(t)
	n := newNode(t, filepath.Join(t.TempDir(), "n"), nodeOpts{agentLoop: true, endpoint: url})
	a := journal.ModelChange{Provider: "openai", API: "responses", Model: sim.Planner}
	b := journal.ModelChange{Provider: "anthropic", API: "messages", Model: sim.Planner}
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "sw", From: project(t),
		Model: &api.ModelRef{Provider: a.Provider, API: a.API, Model: a.Model}, Task: "Please read_file path=src/main.go."})
	if err != nil {
		t.Fatal(err)
	}
	events := waitAnswer(t, n, st.ID, 0)
	before := count(events, journal.KindAssistant)
	lastA := s.Received(render.OpenAIResponses, sim.Planner)
	inputA := inputOf(t, lastA[len(lastA)-1].Body)

	switchModel(t, n, st.ID, b)
	say(t, n, st.ID, "Please search pattern=TODO.")
	events = waitAnswer(t, n, st.ID, before)
	firstB := s.Received(render.Anthropic, sim.Planner)[0]
	if strings.Contains(string(firstB.Body), `"encrypted_content"`) || strings.Contains(string(firstB.Body), `"type":"thinking"`) {
		t.Fatalf("the first request to B carries reasoning: %s", firstB.Body)
	}

	before = count(events, journal.KindAssistant)
	switchModel(t, n, st.ID, a)
	say(t, n, st.ID, "Please list_files path=src.")
	waitAnswer(t, n, st.ID, before)
	checkSim(t, s)
	backA := s.Received(render.OpenAIResponses, sim.Planner)[len(lastA)]
	inputBack := inputOf(t, backA.Body)
	if len(inputBack) <= len(inputA) {
		t.Fatalf("back on A the input has %d items, before the switch %d", len(inputBack), len(inputA))
	}
	reasoning := 0
	for i := range inputA {
		if string(inputA[i]) != string(inputBack[i]) {
			t.Fatalf("input item %d differs after switching back:\nbefore %s\nafter  %s", i, inputA[i], inputBack[i])
		}
		if strings.Contains(string(inputA[i]), `"type":"reasoning"`) {
			reasoning++
		}
	}
	if reasoning == 0 {
		t.Fatalf("A requests replayed none of its reasoning: the byte check proves little: %s", lastA[len(lastA)-1].Body)
	}
}

// inputOf returns the items of a Responses request's input, as sent.
func inputOf(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Input
}

// A tool output over the cap reaches the model cut, with a note, and is
// kept whole as a blob attachment of its result; the capsule verifies
// with it once committed.
func TestBigToolOutputIsAttached(t *testing.T) {
	_, url := startSim(t)
	ws := project(t)
	big := strings.Repeat("a line of the big file, long enough to count\n", 2000) // ~90 KiB
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, filepath.Join(t.TempDir(), "n"), nodeOpts{agentLoop: true, endpoint: url})
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "big", From: ws, Model: planner, Task: "Please read_file path=big.txt."})
	if err != nil {
		t.Fatal(err)
	}
	events := waitAnswer(t, n, st.ID, 0)
	var r journal.ToolResult
	for _, e := range events {
		if e.Kind == journal.KindToolResult {
			if err := json.Unmarshal(e.Body, &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(r.Attachments) != 1 || !strings.Contains(r.Content, "truncated") || len(r.Content) >= len(big) {
		t.Fatalf("result: %d bytes of content, attachments %+v", len(r.Content), r.Attachments)
	}
	a, _ := n.getTenant(st.ID)
	blob, err := os.ReadFile(filepath.Join(a.capsule(), "artifacts", "blobs", strings.TrimPrefix(r.Attachments[0].Blob, "sha256:")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(blob), "2000\ta line of the big file") || int64(len(blob)) != r.Attachments[0].Size {
		t.Fatalf("the attachment holds %d bytes, not the whole output", len(blob))
	}
	if _, err := n.StopAgent(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	if probs := verifyCapsule(n.fsys, a.capsule()); len(probs) > 0 {
		t.Fatalf("capsule: %v", probs)
	}
}

// A watcher of the agent on the node it moved to sees the journal events
// the agent appends there, live.
func TestWatchOnTargetSeesLiveEvents(t *testing.T) {
	_, url := startSim(t)
	cl := newCluster(t, nodeOpts{agentLoop: true, endpoint: url}, nodeOpts{agentLoop: true, endpoint: url})
	a, b := cl.nodes[0], cl.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "w", Model: &api.ModelRef{Provider: "openai", API: "chat", Model: sim.Echo}, Task: "one"})
	if err != nil {
		t.Fatal(err)
	}
	events := waitAnswer(t, a, st.ID, 0)
	if res := move(t, a, b, st.ID); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	live := make(chan journal.Kind, 64)
	go func() {
		_ = b.WatchAgent(ctx, st.ID, api.WatchOptions{Live: true}, func(m api.WatchMessage) error {
			if len(m.Event) > 0 {
				var e journal.Event
				if json.Unmarshal(m.Event, &e) == nil {
					live <- e.Kind
				}
			}
			return nil
		})
	}()
	time.Sleep(50 * time.Millisecond) // let the watch subscribe
	say(t, b, st.ID, "two")
	waitAnswer(t, b, st.ID, count(events, journal.KindAssistant))
	deadline := time.After(5 * time.Second)
	for {
		select {
		case k := <-live:
			if k == journal.KindAssistant {
				return
			}
		case <-deadline:
			t.Fatal("the watch on the target saw no live assistant event")
		}
	}
}
