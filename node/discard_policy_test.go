package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
)

// FORMAT §11.9.4, the node's policy at restore (Config.DiscardRefused): an
// ephemeral agent whose resume is refused (here, a call of a tool that no
// longer exists) is discarded instead of blocked, its old journal kept
// byte for byte; one that is not ephemeral is blocked, with the refusal
// and the reason the policy could not apply; without the policy both are
// blocked (wantRefused, in TestStartRefusesAnUnmappedRenamedTool).
func TestDiscardRefusedAtRestore(t *testing.T) {
	n := newCluster(t, nodeOpts{discardRefused: true}).nodes[0]
	web := envspec.Tool{Name: "web", Transport: "http", URL: "https://mcp.example/web", Effect: envspec.EffectRead, Approval: envspec.ApprovalNever}
	noSearch := func(s *envspec.Spec) { s.Tools = []envspec.Tool{web} }

	kept := createAgent(t, n, "")
	before := compatSetup(t, n, kept, "old.search", noSearch)
	_, err := n.StartAgent(context.Background(), kept)
	if err == nil || !strings.Contains(err.Error(), "tool_missing") || !strings.Contains(err.Error(), "may not be discarded") {
		t.Fatalf("start of a refused agent that is not ephemeral: %v, want the refusal and why it is not discarded", err)
	}
	if got := journalBytes(t, n, kept); string(got) != string(before) {
		t.Errorf("the refused start wrote to the journal")
	}

	gone := createAgent(t, n, "")
	old := compatSetup(t, n, gone, "old.search", noSearch)
	makeEphemeral(t, n, gone, 0, 0)
	if _, err := n.StartAgent(context.Background(), gone); err != nil {
		t.Fatalf("start of a refused ephemeral agent under the policy: %v", err)
	}
	st, err := n.Agent(context.Background(), gone)
	if err != nil || st.State != api.StateRunning {
		t.Fatalf("status %+v (%v), want running", st, err)
	}
	events, err := journal.Decode(strings.NewReader(string(journalBytes(t, n, gone))))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Kind == journal.KindToolCall {
			t.Errorf("the discarded agent's new journal still holds the call %s", e.Body)
		}
	}
	a, _ := n.getTenant(gone)
	set, _ := filepath.Glob(filepath.Join(a.dir, discardedPrefix+"*.jsonl"))
	if len(set) != 1 {
		t.Fatalf("kept journals %v, want one", set)
	}
	b, err := os.ReadFile(set[0])
	if err != nil || !strings.HasPrefix(string(b), string(old)) {
		t.Errorf("the kept journal does not begin with the refused one (%v)", err)
	}
	waitSteps(t, n, gone, 1)
}
