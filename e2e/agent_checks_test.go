package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider/sim"
)

// The checks the agent tests make afterwards, on made-up journals: each
// must find what it looks for (they run with -short too).

// ev makes event seq of machine m with the given body.
func ev(m string, seq uint64, k journal.Kind, body any) journal.Event {
	b, _ := json.Marshal(body)
	return journal.Event{ID: fmt.Sprintf("sha256:%s-%d-%s", m, seq, b), Machine: m, Seq: seq, Kind: k, Body: b}
}

func call(m string, seq uint64, id, name string, args any) journal.Event {
	a, _ := json.Marshal(args)
	return ev(m, seq, journal.KindToolCall, journal.ToolCall{CallID: id, Name: name, Arguments: a, Step: "s1"})
}

func result(m string, seq uint64, id, content string) journal.Event {
	return ev(m, seq, journal.KindToolResult, journal.ToolResult{CallID: id, Content: content})
}

func TestDuplicatesFindsWhatIsDoubled(t *testing.T) {
	text := func(seq uint64, step string) journal.Event {
		return ev("a", seq, journal.KindAssistant, journal.AssistantMessage{Text: "t", Step: step})
	}
	ok := []journal.Event{call("a", 1, "c1", "search", nil), result("a", 2, "c1", "x"), text(3, "s2")}
	tests := []struct {
		name   string
		events []journal.Event
		want   int
	}{
		{"clean", ok, 0},
		{"two results", append(ok[:2:2], result("b", 1, "c1", "y"), text(3, "s2")), 1},
		{"no result", []journal.Event{call("a", 1, "c1", "search", nil)}, 1},
		{"call twice", append(ok[:3:3], call("b", 1, "c1", "search", nil)), 1},
		{"two texts for a step", append(ok[:3:3], text(4, "s2")), 1},
		{"fork at machine and seq", append(ok[:3:3], ev("a", 3, journal.KindUser, journal.UserMessage{Text: "u"})), 1},
	}
	for _, tt := range tests {
		if got := duplicates(tt.events); len(got) != tt.want {
			t.Errorf("%s: got %q, want %d problems", tt.name, got, tt.want)
		}
	}
}

func TestWorkspaceProblemsComparesTheFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(content string) []journal.Event {
		return []journal.Event{call("a", 1, "c1", "write_file", map[string]string{"path": "a.txt", "content": content}), result("a", 2, "c1", "ok")}
	}
	if got := workspaceProblems(write("new"), dir); len(got) != 0 {
		t.Errorf("matching file: %q", got)
	}
	if got := workspaceProblems(write("other"), dir); len(got) != 1 {
		t.Errorf("file differs from the write: %q", got)
	}
	missing := []journal.Event{call("a", 1, "c1", "write_file", map[string]string{"path": "b.txt", "content": "x"}), result("a", 2, "c1", "ok")}
	if got := workspaceProblems(missing, dir); len(got) != 1 {
		t.Errorf("missing file: %q", got)
	}
	edit := []journal.Event{call("a", 1, "c1", "edit_file", map[string]string{"path": "a.txt", "old_string": "x", "new_string": "gone"}), result("a", 2, "c1", "ok")}
	if got := workspaceProblems(edit, dir); len(got) != 1 {
		t.Errorf("edit not in the file: %q", got)
	}
	failed := append(write("other")[:1:1], ev("a", 2, journal.KindToolResult, journal.ToolResult{CallID: "c1", Content: "no", IsError: true}))
	if got := workspaceProblems(failed, dir); len(got) != 0 {
		t.Errorf("a failed write is no effect: %q", got)
	}
}

func TestRefusedLeavesOutOnlyTornBodies(t *testing.T) {
	log := []sim.Request{
		{Seq: 1, Status: 200},
		{Seq: 2, Status: 400, Violations: []sim.Violation{{Status: 400, Message: "capsule-sim: read request: unexpected EOF"}}},
		{Seq: 3, Status: 413, Violations: []sim.Violation{{Status: 413, Message: "capsule-sim: read request: http: request body too large"}}},
		{Seq: 4, Status: 400, Violations: []sim.Violation{{Status: 400, Message: "tool_use ids were found without tool_result blocks"}}},
		{Seq: 5, Status: 200, Violations: []sim.Violation{{Status: 400, Message: "x"}}},
	}
	if got := refused(log); len(got) != 3 {
		t.Errorf("refused: %q, want requests 3, 4 and 5", got)
	}
	if got := tornCount(log); got != 1 {
		t.Errorf("torn: %d, want 1", got)
	}
}
