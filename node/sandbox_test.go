package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/sandbox"
)

// toolResults returns the content of every tool result, by call ID.
func toolResults(t *testing.T, events []journal.Event) map[string]journal.ToolResult {
	t.Helper()
	out := map[string]journal.ToolResult{}
	for _, e := range events {
		if e.Kind == journal.KindToolResult {
			var r journal.ToolResult
			if err := json.Unmarshal(e.Body, &r); err != nil {
				t.Fatal(err)
			}
			out[r.CallID] = r
		}
	}
	return out
}

// An agent's stdio MCP server and its run commands run in the node's
// sandbox: the server starts from the workspace, but its effect outside
// the workspace (a counter file beside it) is refused; run writes the
// workspace and cannot read the node's key; status names the sandbox.
func TestToolsRunInTheSandbox(t *testing.T) {
	sb, err := sandbox.Probe("")
	if err != nil {
		t.Fatal(err)
	}
	if sb.Kind() == sandbox.KindNone {
		t.Fatalf("no sandbox on this machine (CI installs bubblewrap): %s", sb.Reason())
	}
	bin := buildCounter(t)
	ws := t.TempDir()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "counter"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "count")
	g := newGate()
	n := newNode(t, filepath.Join(t.TempDir(), "n"), nodeOpts{agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9"})
	spec := envspec.Default()
	spec.Tools = []envspec.Tool{{Name: "c", Transport: "stdio", Command: "./counter", Args: []string{outside},
		Effect: envspec.EffectExternal, Approval: envspec.ApprovalNever}}
	raw, err := spec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "s", From: ws, Model: planner, Task: "go", Spec: raw})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the first model call")
	body := string(g.requests()[0].Body)
	if !strings.Contains(body, `"run"`) || !strings.Contains(body, `"c_bump_`) {
		t.Fatalf("run and c.bump are not offered:\n%s", body)
	}
	key := filepath.Join(n.cfg.Dir, "node.key")
	g.release <- []provider.Output{
		{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "c1", Name: "c.bump", Arguments: json.RawMessage(`{"note":"n"}`)}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "c2", Name: "run", Arguments: json.RawMessage(`{"command":"echo made > made.txt && cat made.txt"}`)}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "c3", Name: "run", Arguments: mustJSON(map[string]string{"command": "cat " + key})}},
	}
	waitChan(t, g.calls, "the call after the tools")
	g.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "done"}}}
	got := waitActivity(t, n, st.ID, activityIdle)
	if got.Sandbox != sb.Kind() {
		t.Errorf("status sandbox %q, want %q", got.Sandbox, sb.Kind())
	}
	res := toolResults(t, journalOf(t, n, st.ID))
	if c := res["c1"]; !c.IsError {
		t.Errorf("c.bump wrote outside the workspace from the sandbox: %+v", c)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("the counter file outside the workspace exists")
	}
	if c := res["c2"]; c.IsError || !strings.Contains(c.Content, "exit status: 0") || !strings.Contains(c.Content, "made") {
		t.Errorf("run in the workspace: %+v", c)
	}
	if b, err := os.ReadFile(filepath.Join(n.cfg.Dir, "agents", st.ID, workDir, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("made.txt in the workspace: %q %v", b, err)
	}
	keyBytes, _ := os.ReadFile(key)
	if c := res["c3"]; strings.Contains(c.Content, "exit status: 0") || (len(keyBytes) > 0 && strings.Contains(c.Content, strings.TrimSpace(string(keyBytes))[:20])) {
		t.Errorf("run read the node's key: %+v", c)
	}
}
