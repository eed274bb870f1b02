package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// fixtureAgent is one agent as a release listed it before it stopped
// (testdata/fixtures/RELEASE/expect/nodes/N-list.json).
type fixtureAgent struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	State  string `json:"state"`
	Events int    `json:"events"`
}

// ISSUE 12 req 6: the node data folders every release wrote, hosted by
// nodes of this build and moved between them. For each release, its two
// folders (A and B, which trust each other) are restored and each gets a
// node of this build. Every agent the release listed is listed again and
// nothing it held is lost: an agent it held keeps at least the events it
// reported, a retired one stays retired. No agent runs on both nodes. Then
// every agent that runs on A is moved to B, every stopped agent on B is
// started and moved to A; each move commits, the agent runs on its target
// only, and the target's journal begins with exactly the events the
// release's own reader printed for it (expect/nodes/N/ID/log.jsonl).
func TestNodeFixturesHostedAndMoved(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real nodes on every release's node fixtures")
	}
	roots, err := filepath.Glob(filepath.Join("..", "testdata", "fixtures", "*", "expect", "nodes", "ids.json"))
	if err != nil || len(roots) == 0 {
		t.Fatalf("no node fixtures found (%v)", err)
	}
	for _, ids := range roots {
		release := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(ids))))
		t.Run(release, func(t *testing.T) { hostAndMoveFixture(t, release) })
	}
}

func hostAndMoveFixture(t *testing.T, release string) {
	exp := filepath.Join("..", "testdata", "fixtures", release, "expect", "nodes")
	a := startReleaseNode(t, capsuleBin, restoreNodeFixture(t, release, "a"))
	b := startReleaseNode(t, capsuleBin, restoreNodeFixture(t, release, "b"))
	// The peers' addresses are the ones of the run that made the fixture.
	a.cli(t, "node", "peer", "add", b.id, b.listen, "--data", a.dir)
	b.cli(t, "node", "peer", "add", a.id, a.listen, "--data", b.dir)

	listed := map[*releaseNode][]fixtureAgent{a: readList(t, filepath.Join(exp, "a-list.json")), b: readList(t, filepath.Join(exp, "b-list.json"))}
	now := map[*releaseNode]map[string]api.AgentStatus{}
	for n, want := range listed {
		now[n] = settledList(t, n)
		for _, w := range want {
			got, ok := now[n][w.ID]
			switch {
			case !ok:
				t.Errorf("%s: agent %s (%s, %s under %s) is not listed by this build", n.dir, w.ID, w.Name, w.State, release)
			case w.State == api.StateRetired && got.State != api.StateRetired:
				t.Errorf("%s: agent %s was retired under %s, is %s now", n.dir, w.ID, release, got.State)
			case w.State != api.StateRetired && got.Events < w.Events:
				t.Errorf("%s: agent %s has %d events, %s reported %d", n.dir, w.ID, got.Events, release, w.Events)
			}
		}
	}
	for id, sa := range now[a] {
		if sb, ok := now[b][id]; ok && sa.State == api.StateRunning && sb.State == api.StateRunning {
			t.Errorf("agent %s runs on both nodes", id)
		}
	}

	waiting, call := waitingFixture(t, exp)
	if waiting != "" {
		checkWaiting(t, a, waiting, call)
	}
	moves := 0
	for id, st := range now[a] {
		if st.State == api.StateRunning {
			moveFixtureAgent(t, a, b, id, filepath.Join(exp, "a", id, "log.jsonl"))
			moves++
		}
	}
	for id, st := range now[b] {
		if st.State == api.StateStopped {
			b.cli(t, "agent", "start", id, "--data", b.dir)
			waitRunning(t, b, id)
			moveFixtureAgent(t, b, a, id, filepath.Join(exp, "b", id, "log.jsonl"))
			moves++
		}
	}
	if waiting != "" {
		checkWaiting(t, b, waiting, call) // it waits for the same call after its move
	}
	t.Logf("%s: %d agents listed on A, %d on B; %d moved", release, len(now[a]), len(now[b]), moves)
	if moves == 0 {
		t.Errorf("no agent of %s's node fixtures could be moved", release)
	}
}

// moveFixtureAgent moves agent id from one node to the other and checks
// that it runs on the target only and that the target's journal begins
// with the events the fixture's release printed (logPath).
func moveFixtureAgent(t *testing.T, from, to *releaseNode, id, logPath string) {
	t.Helper()
	var res api.MoveResult
	if err := json.Unmarshal([]byte(from.cli(t, "move", id, "--to", to.id, "--json", "--data", from.dir)), &res); err != nil {
		t.Fatal(err)
	}
	if res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move of fixture agent %s to %s: %+v", id, to.dir, res)
	}
	waitRunning(t, to, id)
	if from.running(t, id) {
		t.Fatalf("agent %s still runs on its source %s", id, from.dir)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.ID == "" {
			t.Fatalf("%s: line %q: %v", logPath, line, err)
		}
		want = append(want, e.ID)
	}
	got := journalIDs(t, filepath.Join(to.dir, "agents", id, "capsule", "memory", "timeline_events.jsonl"))
	if len(got) < len(want) {
		t.Fatalf("agent %s on %s: %d events, the fixture held %d", id, to.dir, len(got), len(want))
	}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("agent %s on %s: event %d is %s, the fixture held %s", id, to.dir, k+1, got[k], want[k])
		}
	}
}

func readList(t *testing.T, path string) []fixtureAgent {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var l []fixtureAgent
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return l
}

// settledList returns n's agents by ID once none is frozen (a move the
// fixture's crash left behind has been resolved; an incoming agent, the
// pre-copied data of a move its source rolled back, stays as it is).
func settledList(t *testing.T, n *releaseNode) map[string]api.AgentStatus {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		last = n.cli(t, "agent", "list", "--json", "--data", n.dir)
		var list []api.AgentStatus
		if err := json.Unmarshal([]byte(last), &list); err != nil {
			t.Fatalf("agent list --json: %v", err)
		}
		m := map[string]api.AgentStatus{}
		settled := true
		for _, s := range list {
			m[s.ID] = s
			if s.State == api.StateFrozen {
				settled = false
			}
		}
		if settled {
			return m
		}
	}
	t.Fatalf("%s: agents did not settle:\n%s", n.dir, last)
	return nil
}

// waitingFixture returns the agent a release left waiting for an approval
// (ids.json "waiting", from 0.3.0) and the call it waits on, as the
// release's status printed it; "" when the release's fixtures have none.
func waitingFixture(t *testing.T, exp string) (id, call string) {
	t.Helper()
	var ids struct {
		Waiting string `json:"waiting"`
	}
	b, err := os.ReadFile(filepath.Join(exp, "ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ids); err != nil {
		t.Fatalf("ids.json: %v", err)
	}
	if ids.Waiting == "" {
		return "", ""
	}
	var st api.AgentStatus
	b, err = os.ReadFile(filepath.Join(exp, "waiting-status.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil || len(st.Waiting) != 1 {
		t.Fatalf("waiting-status.json: %v, %d calls waiting; want one", err, len(st.Waiting))
	}
	return ids.Waiting, st.Waiting[0].CallID
}

// checkWaiting checks that agent id on n waits for the approval of call.
func checkWaiting(t *testing.T, n *releaseNode, id, call string) {
	t.Helper()
	var st api.AgentStatus
	if err := json.Unmarshal([]byte(n.cli(t, "agent", "status", id, "--json", "--data", n.dir)), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Waiting) != 1 || st.Waiting[0].CallID != call {
		t.Errorf("agent %s on %s waits for %+v, want call %s, as the fixture's release left it", id, n.dir, st.Waiting, call)
	}
}
