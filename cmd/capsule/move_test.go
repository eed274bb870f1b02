package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
)

// TestMoveStatusNoMoveAndMoveToSelf: `move status` of an agent that never
// moved says "no move" and exits 0, in text and --json; `move --to` the
// node's own ID says it is the node's own ID (issue 10 item 6).
func TestMoveStatusNoMoveAndMoveToSelf(t *testing.T) {
	dir := shortTempDir(t)
	n := startNode(t, dir)
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "t", Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := capsuleCLI(t, "move", "status", st.ID, "--data", dir)
	if code != exitOK || strings.TrimSpace(out) != "agent "+st.ID+": no move" {
		t.Errorf("move status: code %d, out %q, err %q; want exit 0 and \"no move\"", code, out, errOut)
	}
	out, errOut, code = capsuleCLI(t, "move", "status", st.ID, "--data", dir, "--json")
	var js api.MoveStatus
	if code != exitOK || json.Unmarshal([]byte(out), &js) != nil || js.Phase != api.PhaseNone {
		t.Errorf("move status --json: code %d, out %q, err %q; want exit 0 and phase none", code, out, errOut)
	}
	_, errOut, code = capsuleCLI(t, "move", st.ID, "--to", string(n.ID()), "--data", dir)
	if code == exitOK || !strings.Contains(errOut, "own ID") {
		t.Errorf("move to its own ID: code %d, err %q; want a failure naming the node's own ID", code, errOut)
	}
}

// TestReportMoveGivesTheReason: a move that did not commit prints its
// reason and returns it in the error (the CLI's last line), and --json
// carries it (issue 10 item 4).
func TestReportMoveGivesTheReason(t *testing.T) {
	res := api.MoveResult{Agent: "A", MoveID: "M", Outcome: api.OutcomeRolledBack, Reason: "offer: no answer after 4 attempts: connection refused"}
	var out strings.Builder
	err := reportMove(&out, res, false)
	if err == nil || err.Error() != "move M: rolled_back: "+res.Reason || !strings.Contains(out.String(), "reason: "+res.Reason) {
		t.Errorf("text: err %v, out %q", err, out.String())
	}
	out.Reset()
	err = reportMove(&out, res, true)
	var js api.MoveResult
	if err == nil || json.Unmarshal([]byte(out.String()), &js) != nil || js.Reason != res.Reason {
		t.Errorf("--json: err %v, out %q", err, out.String())
	}
}
