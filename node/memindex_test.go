package node

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/provider/sim"
)

// An agent on the simulator searches its memory with memory_search: the
// hit is the user message that stated the note (found by meaning:
// "rotation" is not a word of it), the search builds the capsule's index
// and saves it, and the next open of the capsule reuses the stored index
// (the journal only grew since); after a move, a search on the target
// finds it again.
func TestAgentSearchesItsMemory(t *testing.T) {
	s, url := startSim(t)
	cl := newCluster(t, nodeOpts{agentLoop: true, endpoint: url}, nodeOpts{agentLoop: true, endpoint: url})
	n, other := cl.nodes[0], cl.nodes[1]
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

	// The index travels with the capsule: after a move the target's first
	// search finds the note again.
	if res := move(t, n, other, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	seen := len(events)
	say(t, other, id, "Please memory_search query=which_day_rotates.")
	events = waitAnswer(t, other, id, count(events, journal.KindAssistant))
	var found bool
	for _, e := range events[seen:] {
		var r journal.ToolResult
		if e.Kind == journal.KindToolResult && json.Unmarshal(e.Body, &r) == nil && r.Name == "memory_search" {
			found = true
			if r.IsError || !strings.Contains(r.Content, "the_deploy_key_rotates_on_mondays") {
				t.Errorf("memory_search on the target: %+v", r)
			}
		}
	}
	if !found {
		t.Fatalf("no memory_search on the target: %v", kindsOf(events[seen:]))
	}
	checkSim(t, s)
}

// The spec's memory.embedder chooses a remote embedder: the node calls it
// where it calls that provider (here the simulator, as --model-endpoint)
// with the key the spec names from the host's secret store; the index the
// search saves is that embedder's, and the key is in no file of the
// capsule.
func TestAgentSearchesWithTheSpecsEmbedder(t *testing.T) {
	const key = "sk-embed-7d1e0b3c9a"
	s, url := startSim(t)
	n := newCluster(t, nodeOpts{agentLoop: true, endpoint: url, env: map[string]string{"CAPSULE_SECRET_EMBED_KEY": key}}).nodes[0]
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "remote", From: project(t), Model: planner, Stopped: true,
		Task: "Please memory_search query=where_is_the_TODO."})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := n.getTenant(st.ID)
	a.mu.Lock()
	editSpecLocked(t, n, a, func(spec *envspec.Spec) {
		spec.Secrets = append(spec.Secrets, "EMBED_KEY")
		spec.Memory = &envspec.Memory{Embedder: &envspec.Embedder{Provider: envspec.EmbedderOpenAI, Model: sim.Embed, Secret: "EMBED_KEY"}}
	})
	a.mu.Unlock()
	if _, err := n.StartAgent(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	waitAnswer(t, n, st.ID, 0)
	embeds := 0
	for _, r := range s.Requests() {
		if r.Model == sim.Embed {
			embeds++
		}
	}
	if embeds == 0 {
		t.Fatal("the simulator's embeddings endpoint got no request")
	}
	b, err := os.ReadFile(filepath.Join(a.capsule(), filepath.FromSlash(manifest.IndexPath)))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Embedder *struct {
			Name string
			Dims int
		} `json:"embedder"`
	}
	if err := json.Unmarshal(b, &idx); err != nil || idx.Embedder == nil || !strings.Contains(idx.Embedder.Name, sim.Embed) || idx.Embedder.Dims != 768 {
		t.Fatalf("the capsule's index: %.300s (%v), want the remote embedder's", b, err)
	}
	err = filepath.Walk(a.capsule(), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		if c, _ := os.ReadFile(p); bytes.Contains(c, []byte(key)) {
			t.Errorf("%s holds the embedder's key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
