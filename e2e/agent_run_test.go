package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// Driving an LLM agent (the agent loop on the simulator) through the CLI
// of real nodes, and the checks made after each run.

// simModel is a model of the simulator, as `capsule agent model` takes it.
type simModel struct{ provider, api, model string }

var (
	claudePlanner    = simModel{"anthropic", "messages", "capsule-sim/planner"}
	responsesPlanner = simModel{"openai", "responses", "capsule-sim/planner"}
)

// createLLMAgent creates an agent on p from the workspace ws, stopped,
// gives it the model m and the task, and starts it.
func (c *cluster) createLLMAgent(p *proc, ws string, m simModel, task string) string {
	c.t.Helper()
	out, err := c.cli(context.Background(), "agent", "create", "--name", "llm", "--stopped", "--from", ws, "--data", p.dir, "--json")
	if err != nil {
		c.t.Fatal(err)
	}
	var st api.AgentStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("agent create --json: %v: %q", err, out)
	}
	c.agent = st.ID
	c.setModel(p, st.ID, m)
	c.say(p, st.ID, task)
	c.must("agent", "start", st.ID, "--data", p.dir)
	return st.ID
}

// must runs a capsule command that must succeed.
func (c *cluster) must(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.cli(ctx, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *cluster) setModel(p *proc, agent string, m simModel) {
	c.t.Helper()
	c.must("agent", "model", agent, "--provider", m.provider, "--api", m.api, "--model", m.model, "--data", p.dir)
}

func (c *cluster) say(p *proc, agent, text string) {
	c.t.Helper()
	c.must("agent", "say", agent, text, "--data", p.dir)
}

// liveEvents reads the journal of the capsule p holds, from disk.
func liveEvents(t *testing.T, p *proc, agent string) []journal.Event {
	t.Helper()
	events, err := readJournalFile(journalPaths(p.dir, agent)[0])
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func countKind(events []journal.Event, k journal.Kind) int {
	n := 0
	for _, e := range events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// waitAnswers waits until the agent on p is idle with at least n
// assistant texts in its journal, and returns the journal.
func (c *cluster) waitAnswers(p *proc, agent string, n int) []journal.Event {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var st api.AgentStatus
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err = p.client().Agent(ctx, agent)
		cancel()
		if err == nil && st.Activity == "blocked" {
			c.t.Fatalf("agent blocked on %s: %s", p.name, st.Blocked)
		}
		if err == nil && st.Activity == "idle" {
			if events := liveEvents(c.t, p, agent); countKind(events, journal.KindAssistant) >= n {
				return events
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("agent on %s gave no answer %d within 60 s: %+v %v\n%s", p.name, n, st, err, tail(p.log, 30))
	return nil
}

// waitFile waits until path exists; false after the timeout.
func waitFile(path string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// toolMark is where a node records the tool it runs for the agent.
func toolMark(p *proc, agent string) string {
	return filepath.Join(p.dir, "agents", agent, "tool-running.json")
}

// workDir is the live workspace of the agent on p.
func workDir(p *proc, agent string) string {
	return filepath.Join(p.dir, "agents", agent, "work")
}

// afterRun stops the agent on its holder (so that the capsule is
// committed) and checks what every run must leave: the capsule verifies,
// the journals of every node verify and agree, every request the
// simulator received passed its provider's rules, no event is doubled,
// every call has exactly one result, and the workspace holds what the
// journaled write_file and edit_file results say. It returns the events
// of all copies, merged.
func (c *cluster) afterRun(holder *proc, agent string, s *simProc) []journal.Event {
	c.t.Helper()
	c.must("agent", "stop", agent, "--data", holder.dir)
	capDir := filepath.Join(holder.dir, "agents", agent, "capsule")
	if out, err := c.cli(context.Background(), "verify", capDir); err != nil {
		c.t.Errorf("capsule verify %s: %v\n%s", capDir, err, out)
	}
	c.checkJournalsOnDisk(agent)
	for _, r := range refused(s.requests(c.t)) {
		c.t.Errorf("the simulator refused a request: %s", r)
	}
	events := c.mergedEvents(agent)
	for _, p := range duplicates(events) {
		c.t.Errorf("duplicated: %s", p)
	}
	for _, p := range workspaceProblems(events, workDir(holder, agent)) {
		c.t.Errorf("workspace: %s", p)
	}
	return events
}

// mergedEvents is the union of every copy of the journal on every node.
func (c *cluster) mergedEvents(agent string) []journal.Event {
	c.t.Helper()
	dirs := map[string]string{}
	for _, p := range c.procs {
		dirs[p.name] = p.dir
	}
	copies, err := collectJournals(dirs, agent)
	if err != nil {
		c.t.Fatal(err)
	}
	var merged []journal.Event
	for _, cp := range copies {
		if merged, err = journal.Merge(merged, cp.events); err != nil {
			c.t.Fatalf("merging %s: %v", cp.path, err)
		}
	}
	return merged
}

// duplicates lists what the journal holds twice: two events at one
// (machine, seq), two assistant texts or two sets of calls for one model
// step, two results for one call; and calls left without a result.
func duplicates(events []journal.Event) []string {
	var out []string
	at := map[string]string{}
	texts, results := map[string]int{}, map[string]int{}
	callStep := map[string]string{}
	var calls []string
	for _, e := range events {
		key := fmt.Sprintf("%s/%d", e.Machine, e.Seq)
		if id, ok := at[key]; ok && id != e.ID {
			out = append(out, fmt.Sprintf("two events at %s: %s and %s", key, id, e.ID))
		}
		at[key] = e.ID
		switch e.Kind {
		case journal.KindAssistant:
			var m journal.AssistantMessage
			_ = json.Unmarshal(e.Body, &m)
			if texts[m.Step]++; m.Step != "" && texts[m.Step] > 1 {
				out = append(out, fmt.Sprintf("two assistant texts for step %s", m.Step))
			}
		case journal.KindToolCall:
			var tc journal.ToolCall
			_ = json.Unmarshal(e.Body, &tc)
			if _, ok := callStep[tc.CallID]; ok {
				out = append(out, fmt.Sprintf("call %s journaled twice", tc.CallID))
			}
			callStep[tc.CallID] = tc.Step
			calls = append(calls, tc.CallID)
		case journal.KindToolResult:
			var r journal.ToolResult
			_ = json.Unmarshal(e.Body, &r)
			if results[r.CallID]++; results[r.CallID] > 1 {
				out = append(out, fmt.Sprintf("%d results for call %s", results[r.CallID], r.CallID))
			}
		}
	}
	for _, id := range calls {
		if results[id] == 0 {
			out = append(out, fmt.Sprintf("call %s has no result", id))
		}
	}
	return out
}

// workspaceProblems checks the workspace against the journal: the file of
// every successful write_file holds its content, unless a later write or
// edit of the same path followed; the file of the last successful
// edit_file of a path holds its new_string.
func workspaceProblems(events []journal.Event, work string) []string {
	type effect struct {
		name string
		args map[string]any
	}
	calls := map[string]effect{}
	last := map[string]effect{} // path -> its last successful effect
	for _, e := range events {
		switch e.Kind {
		case journal.KindToolCall:
			var tc journal.ToolCall
			_ = json.Unmarshal(e.Body, &tc)
			var args map[string]any
			_ = json.Unmarshal(tc.Arguments, &args)
			calls[tc.CallID] = effect{tc.Name, args}
		case journal.KindToolResult:
			var r journal.ToolResult
			_ = json.Unmarshal(e.Body, &r)
			if ef, ok := calls[r.CallID]; ok && !r.IsError && (ef.name == "write_file" || ef.name == "edit_file") {
				path, _ := ef.args["path"].(string)
				last[path] = ef
			}
		}
	}
	var out []string
	for path, ef := range last {
		got, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(path)))
		if err != nil {
			out = append(out, fmt.Sprintf("%s %s succeeded, but: %v", ef.name, path, err))
			continue
		}
		want, _ := ef.args["content"].(string)
		if ef.name == "edit_file" {
			want, _ = ef.args["new_string"].(string)
			if !bytes.Contains(got, []byte(want)) {
				out = append(out, fmt.Sprintf("edit_file %s succeeded, but the file lacks %q: %q", path, want, got))
			}
			continue
		}
		if string(got) != want {
			out = append(out, fmt.Sprintf("write_file %s succeeded with %q, but the file holds %q", path, want, got))
		}
	}
	return out
}

// results returns the result of every call of the named tool, in order.
func results(events []journal.Event, name string) []journal.ToolResult {
	names := map[string]string{}
	var out []journal.ToolResult
	for _, e := range events {
		switch e.Kind {
		case journal.KindToolCall:
			var tc journal.ToolCall
			_ = json.Unmarshal(e.Body, &tc)
			names[tc.CallID] = tc.Name
		case journal.KindToolResult:
			var r journal.ToolResult
			_ = json.Unmarshal(e.Body, &r)
			if names[r.CallID] == name {
				out = append(out, r)
			}
		}
	}
	return out
}

// machineOf returns the machine that journaled the event of kind k whose
// body has the given call ID.
func machineOf(events []journal.Event, k journal.Kind, callID string) string {
	for _, e := range events {
		if e.Kind == k && strings.Contains(string(e.Body), `"call_id":"`+callID+`"`) {
			return e.Machine
		}
	}
	return ""
}
