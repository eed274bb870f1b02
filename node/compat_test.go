package node

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
)

// compatSetup stops a new agent, gives it the spec edit makes and a call
// of tool with its result in the journal (as an older release or another
// spec left it), and returns the journal's bytes.
func compatSetup(t *testing.T, n *Node, id, tool string, edit func(*envspec.Spec)) []byte {
	t.Helper()
	if _, err := n.StopAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	a, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	editSpecLocked(t, n, a, edit)
	p := journal.Producer{Provider: "anthropic", API: "messages", Model: "m"}
	call := journal.ToolCall{CallID: "c1", Name: tool, Arguments: json.RawMessage(`{}`), Producer: p}
	if _, err := a.log.Append(journal.KindToolCall, a.holder.Holder(), n.wallTime(), call); err != nil {
		t.Fatal(err)
	}
	if _, err := a.log.Append(journal.KindToolResult, a.holder.Holder(), n.wallTime(), journal.ToolResult{CallID: "c1", Name: tool, Content: "ok"}); err != nil {
		t.Fatal(err)
	}
	return journalBytes(t, n, id)
}

// wantRefused checks that starting the agent is refused naming code and
// tool, that its status says so, and that nothing was written.
func wantRefused(t *testing.T, n *Node, id string, before []byte, code, tool string) {
	t.Helper()
	_, err := n.StartAgent(context.Background(), id)
	if err == nil || !strings.Contains(err.Error(), ErrCompat.Error()) || !strings.Contains(err.Error(), code) || !strings.Contains(err.Error(), tool) {
		t.Fatalf("start: %v, want a %s refusal naming %s", err, code, tool)
	}
	st, err := n.Agent(context.Background(), id)
	if err != nil || st.State == api.StateRunning || !strings.Contains(st.Blocked, code) {
		t.Errorf("status %+v (%v), want blocked with %s", st, err, code)
	}
	if got := journalBytes(t, n, id); !bytes.Equal(got, before) {
		t.Errorf("the refusal wrote to the journal:\n%s", got[len(before):])
	}
}

// FORMAT §11.9.1: a tool the journal names that neither resolves nor is
// mapped refuses resume, naming it, and nothing is written; once the spec
// maps the old name, resume journals the tool_mapping first, then runs.
func TestStartRefusesAnUnmappedRenamedTool(t *testing.T) {
	n := newCluster(t, nodeOpts{}).nodes[0]
	id := createAgent(t, n, "")
	web := envspec.Tool{Name: "web", Transport: "http", URL: "https://mcp.example/web", Effect: envspec.EffectRead, Approval: envspec.ApprovalNever}
	before := compatSetup(t, n, id, "old.search", func(s *envspec.Spec) { s.Tools = []envspec.Tool{web} })
	wantRefused(t, n, id, before, "tool_missing", "old.search")

	a, _ := n.getTenant(id)
	c, err := capsule.Open(n.fsys, a.capsule(), capsule.Config{Writer: n.writer()})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := c.Environment()
	spec.ToolMappings = map[string]string{"old.search": "web.search"}
	if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetEnvironment(spec) }); err != nil {
		t.Fatal(err)
	}
	if _, err := n.StartAgent(context.Background(), id); err != nil {
		t.Fatalf("start with the mapping: %v", err)
	}
	events, err := journal.Decode(bytes.NewReader(journalBytes(t, n, id)))
	if err != nil {
		t.Fatal(err)
	}
	old, err := journal.Decode(bytes.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	next := events[len(old):]
	if len(next) < 2 || next[0].Kind != "tool_mapping" || next[0].V != 2 || next[1].Kind != journal.KindResumed {
		t.Fatalf("events after the refusal: %v", kindsOf(next))
	}
	var m struct{ From, To, Source string }
	if err := json.Unmarshal(next[0].Body, &m); err != nil || m.From != "old.search" || m.To != "web.search" || m.Source != "spec" {
		t.Errorf("tool_mapping %s (%v)", next[0].Body, err)
	}
	waitSteps(t, n, id, 1)
}

// FORMAT §11.9.3: a call the journal shows completed without an approval
// that the spec in force now requires refuses resume (check_skipped): the
// old completion never satisfies the new rule.
func TestStartRefusesACallThatSkippedANowRequiredApproval(t *testing.T) {
	n := newCluster(t, nodeOpts{}).nodes[0]
	id := createAgent(t, n, "")
	before := compatSetup(t, n, id, "read_file", func(s *envspec.Spec) {
		s.Builtins = map[string]envspec.Rule{"read_file": {Approval: envspec.ApprovalRequired}}
	})
	wantRefused(t, n, id, before, "check_skipped", "read_file")
}

func kindsOf(events []journal.Event) []journal.Kind {
	var out []journal.Kind
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

// FORMAT §11.9, PROTOCOL §3 phase 5: a move's target runs the checks in
// prepare on the staged capsule when another release wrote it, so a
// refusal rolls the move back before the point of no return; a mapping is
// kept and journaled first when the agent starts there.
func TestPrepareChecksAnotherReleasesAgent(t *testing.T) {
	n := newCluster(t, nodeOpts{}).nodes[0]
	id := createAgent(t, n, "")
	web := envspec.Tool{Name: "web", Transport: "http", URL: "https://mcp.example/web", Effect: envspec.EffectRead, Approval: envspec.ApprovalNever}
	compatSetup(t, n, id, "old.search", func(s *envspec.Spec) { s.Tools = []envspec.Tool{web} })
	a, _ := n.getTenant(id)
	a.mu.Lock()
	defer a.mu.Unlock()
	older := &manifest.Manifest{Writer: manifest.Writer{Release: "0.2.0"}}
	if probs := a.prepareCompat(a.capsule(), older); len(probs) != 1 || !strings.Contains(probs[0], "tool_missing") || !strings.Contains(probs[0], "old.search") {
		t.Errorf("prepare of a 0.2.0 agent: %q", probs)
	}
	if probs := a.prepareCompat(a.capsule(), &manifest.Manifest{Writer: n.writer()}); probs != nil {
		t.Errorf("prepare of this release's agent checked again: %q", probs)
	}
	c, err := capsule.Open(n.fsys, a.capsule(), capsule.Config{Writer: n.writer()})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := c.Environment()
	spec.ToolMappings = map[string]string{"old.search": "web.search"}
	if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetEnvironment(spec) }); err != nil {
		t.Fatal(err)
	}
	if probs := a.prepareCompat(a.capsule(), older); probs != nil {
		t.Fatalf("prepare with the mapping: %q", probs)
	}
	kinds, _ := a.takeMappings([]journal.Kind{journal.KindMoved, journal.KindEpoch}, []any{nil, nil})
	if len(kinds) != 3 || kinds[0] != "tool_mapping" || kinds[1] != journal.KindMoved {
		t.Errorf("start after the move journals %v", kinds)
	}
}
