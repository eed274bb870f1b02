package node

import (
	"context"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
)

// PROTOCOL §4b, FORMAT §11.8: a target that reads journal version 1 only
// (as release 0.2.0 does) states so in its want; the source sends the
// journal's down-converted view, the same lines with schemas.journal 1,
// and the target, which refuses to prepare a journal of version 2, takes
// the agent.
func TestMoveToAJournal1NodeSendsTheView(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{journalUpTo: 1})
	a, old := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, "")
	var v2 int
	for _, e := range journalOf(t, a, id) {
		if e.V == 2 {
			v2++
		}
	}
	if v2 == 0 {
		t.Fatal("the agent's journal holds no version-2 line")
	}
	if res := move(t, a, old, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move to the journal-1 node: %+v", res)
	}
	waitSteps(t, old, id, 3)
	c.checkHolder(old, id)
}

// A journal that holds a line of a version-2 kind cannot be handed to a
// node that reads journal version 1: the move is refused on the want,
// before the freeze, naming the kind and the versions, and the agent goes
// on running on its node.
func TestMoveRefusedBeforeTheFreeze(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{journalUpTo: 1})
	a, old := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, "")
	appendAndWake(t, a, id, "approval", []byte(`{"by":"op","call_id":"c1","decision":"approved","request":"sha256:`+strings.Repeat("0", 64)+`"}`))
	res := move(t, a, old, id)
	if res.Outcome != api.OutcomeRolledBack || !strings.Contains(res.Reason, "journal versions 1 to 1") || !strings.Contains(res.Reason, "approval") {
		t.Fatalf("move: %+v, want a rollback naming the journal versions and the approval", res)
	}
	for _, e := range journalOf(t, a, id) {
		if e.Kind == journal.KindFrozen {
			t.Errorf("the agent was frozen: %s", e.Body)
		}
	}
	waitSteps(t, a, id, 3)
	if st, err := old.Agent(context.Background(), id); err == nil && st.State == api.StateRunning {
		t.Errorf("the journal-1 node runs the agent: %+v", st)
	}
}

// A reply without versions comes from release 0.1.0 or 0.2.0: it reads
// journal version 1 only, and nothing is assumed of the other kinds.
func TestPeerReadsOfAnOlderNode(t *testing.T) {
	old := mustJSON(transfer.Message{Type: transfer.MsgWant})
	if got := peerReads(old); len(got) != 1 || got[schema.Journal].Current != 1 {
		t.Errorf("older node: %+v", got)
	}
	n := &Node{cfg: Config{}}
	cur := n.replyBody(&transfer.Message{Type: transfer.MsgWant})
	if got := peerReads(cur); got[schema.Journal].Current != journal.SchemaVersion || got[schema.Environment].Current != schema.Current[schema.Environment] {
		t.Errorf("this release: %+v", got)
	}
}
