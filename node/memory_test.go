package node

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
)

// memoryBlock is the working memory's block as a request body holds it
// (FORMAT §6.4): JSON-escaped, without its quotes.
func memoryBlock(t *testing.T, mem string) []byte {
	t.Helper()
	b, err := json.Marshal(render.WorkingMemoryHeader + mem)
	if err != nil {
		t.Fatal(err)
	}
	return b[1 : len(b)-1]
}

// checkMemory fails the test unless the agent's capsule holds mem as its
// working memory and the newest request the endpoint got carries it.
func checkMemory(t *testing.T, s *sim.Server, n *Node, id, mem, when string) {
	t.Helper()
	a, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.workingMemory(); err != nil || got != mem {
		t.Fatalf("%s: working memory %q (%v), want %q", when, got, err, mem)
	}
	reqs := s.Requests()
	if last := reqs[len(reqs)-1].Body; !bytes.Contains(last, memoryBlock(t, mem)) {
		t.Fatalf("%s: the newest request does not carry the working memory:\n%s", when, last)
	}
}

// FORMAT §6.4: the memory tool's replace and append are committed with
// the capsule; the working memory survives a node restart and a move,
// and every request after a change carries it.
func TestWorkingMemorySurvivesRestartAndMove(t *testing.T) {
	s, url := startSim(t)
	o := nodeOpts{agentLoop: true, endpoint: url}
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	c := &cluster{t: t, nodes: []*Node{newNode(t, dirs[0], o), newNode(t, dirs[1], o)}}
	c.link()
	st, err := c.nodes[0].CreateAgent(t.Context(), api.CreateAgentRequest{Name: "mem", From: project(t), Model: planner,
		Task: `Please memory action=replace content="bug in parse.go"`})
	if err != nil {
		t.Fatal(err)
	}
	id := st.ID
	waitActivity(t, c.nodes[0], id, activityIdle)
	checkMemory(t, s, c.nodes[0], id, "bug in parse.go", "after replace")

	restartNode(t, c, 0, dirs[0], o)
	before := count(journalOf(t, c.nodes[0], id), journal.KindAssistant)
	first := len(s.Requests())
	say(t, c.nodes[0], id, `Please memory action=append content="- check the lexer"`)
	waitAnswer(t, c.nodes[0], id, before)
	if body := s.Requests()[first].Body; !bytes.Contains(body, memoryBlock(t, "bug in parse.go")) {
		t.Fatalf("the first request after the restart does not carry the working memory:\n%s", body)
	}
	const both = "bug in parse.go\n- check the lexer"
	checkMemory(t, s, c.nodes[0], id, both, "after append")

	if res := move(t, c.nodes[0], c.nodes[1], id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	before = count(journalOf(t, c.nodes[1], id), journal.KindAssistant)
	say(t, c.nodes[1], id, "Please list_files path=src.")
	waitAnswer(t, c.nodes[1], id, before)
	checkMemory(t, s, c.nodes[1], id, both, "after the move")
	checkSim(t, s)
}
