package node

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/vfs"
)

// TestMovesLeaveNoUnreferencedBlobs moves an agent back and forth: each
// staging takes the target's whole CAS store, whose older blobs the new
// holder prunes once it runs the agent, so the holder's capsule verifies
// without a single unreferenced-blob warning, and its attachment blobs
// stay (TestMoveCarriesJournalAttachments checks those travel).
func TestMovesLeaveNoUnreferencedBlobs(t *testing.T) {
	opts := nodeOpts{runner: quietRunner{}}
	cl := newCluster(t, opts, opts)
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, writeTestWorkspace(t, false))
	attachToJournal(t, a, id, []byte("kept: an attachment's blob"))
	if _, err := a.StartAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		from, to := a, b
		if i%2 == 1 {
			from, to = b, a
		}
		from.hooks.beforeFreeze = func(agent string) { // a new version every move: the old one goes unreferenced
			p := filepath.Join(from.cfg.Dir, "agents", agent, workDir, "changing.txt")
			if err := vfs.WriteFile(from.fsys, p, []byte(fmt.Sprintf("version %d\n", i)), 0o644); err != nil {
				t.Error(err)
			}
		}
		waitSteps(t, from, id, 2)
		if res := move(t, from, to, id); res.Outcome != api.OutcomeCommitted {
			t.Fatalf("move %d: %+v", i, res)
		}
		ag, _ := to.getTenant(id)
		var r *capsule.Report
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var err error
			if r, err = capsule.Verify(vfs.OS{}, ag.capsule(), capsule.VerifyOptions{}); err != nil {
				t.Fatal(err)
			}
			// The new holder prunes while this verifies: a blob listed
			// and then pruned reads as missing, so wait for both to settle.
			if len(r.Problems) == 0 && len(unreferenced(r)) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(r.Problems) > 0 || len(unreferenced(r)) > 0 {
			t.Fatalf("after move %d the holder's capsule has problems %v and unreferenced blobs %v", i, r.Problems, unreferenced(r))
		}
	}
}

// unreferenced returns the unreferenced-blob warnings of r (a running
// agent's uncommitted journal tail is another, expected, warning).
func unreferenced(r *capsule.Report) []capsule.Problem {
	var out []capsule.Problem
	for _, w := range r.Warnings {
		if w.Kind == capsule.KindUnreferenced {
			out = append(out, w)
		}
	}
	return out
}
