package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/memory"
)

// An agent on the simulator searches its memory with memory_search: the
// hit is the user message that stated the note (found by meaning:
// "rotation" is not a word of it), the search builds the capsule's index
// and saves it, and the next open of the capsule reuses the stored index
// (the journal only grew since).
func TestAgentSearchesItsMemory(t *testing.T) {
	s, url := startSim(t)
	n := newCluster(t, nodeOpts{agentLoop: true, endpoint: url}).nodes[0]
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "recall", From: project(t), Model: planner,
		Task: "Please write_file path=notes.txt content=the_deploy_key_rotates_on_mondays."})
	if err != nil {
		t.Fatal(err)
	}
	id := st.ID
	events := waitAnswer(t, n, id, 0)
	say(t, n, id, "Please memory_search query=deploy_key_rotation.")
	events = waitAnswer(t, n, id, count(events, journal.KindAssistant))
	var result *journal.ToolResult
	for i := range events {
		if events[i].Kind != journal.KindToolResult {
			continue
		}
		var r journal.ToolResult
		if err := json.Unmarshal(events[i].Body, &r); err != nil {
			t.Fatal(err)
		}
		if r.Name == "memory_search" {
			result = &r
		}
	}
	if result == nil {
		t.Fatalf("the agent never called memory_search: %v", kindsOf(events))
	}
	if result.IsError || !strings.Contains(result.Content, "the_deploy_key_rotates_on_mondays") || !strings.Contains(result.Content, "event sha256:") {
		t.Fatalf("memory_search result: %+v", result)
	}
	checkSim(t, s)

	a, _ := n.getTenant(id)
	b, err := os.ReadFile(filepath.Join(a.capsule(), filepath.FromSlash(manifest.IndexPath)))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Embedder *struct{ Name string } `json:"embedder"`
		Chunks   []json.RawMessage      `json:"chunks"`
	}
	if err := json.Unmarshal(b, &idx); err != nil || idx.Embedder == nil || idx.Embedder.Name != "capsule-hash" || len(idx.Chunks) == 0 {
		t.Fatalf("the capsule's index after a search: %.200s (%v)", b, err)
	}
	// The stored index is reused by the next open: the journal only grew
	// since the search, so only the new events are embedded.
	_, rep, _, err := memory.Open(t.Context(), n.fsys, a.capsule(), memory.Hash{})
	if err != nil || rep.Mode == memory.ModeFull {
		t.Errorf("opening the capsule's index after the search: %+v (%v), want it reused", rep, err)
	}
}
