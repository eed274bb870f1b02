package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/internal/nodeproc"
)

// commit010 is release 0.1.0's commit (docs/RELEASES.md).
const commit010 = "c453eb8"

// commit020 is the commit release 0.2.0's fixtures were made from
// (docs/RELEASES.md): the newest build of 0.2.0 in history.
const commit020 = "15838f8"

// release010 returns a capsule binary of release 0.1.0 (releaseAt).
func release010(t *testing.T) string { return releaseAt(t, "0.1.0", commit010) }

// releaseAt returns a capsule binary of a release, built from its commit
// in git history alone (git archive) the first time and cached, as
// scripts/fixtures.sh caches it, in $CAPSULE_FIXTURE_CACHE or the user's
// cache folder under capsule-fixtures/<commit>/capsule.
func releaseAt(t *testing.T, release, commit string) string {
	t.Helper()
	full, err := exec.Command("git", "rev-parse", "--verify", commit+"^{commit}").Output()
	if err != nil {
		t.Fatalf("git rev-parse %s: %v (this test needs the repository's history)", commit, err)
	}
	cache := os.Getenv("CAPSULE_FIXTURE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "capsule-fixtures")
	}
	bin := filepath.Join(cache, strings.TrimSpace(string(full)), "capsule")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := t.TempDir()
	// From the top of the work tree: run in a subfolder, git archive
	// archives only that folder.
	archive := exec.Command("sh", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive `+commit+" | tar -x -C "+src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.commit="+commit, "-o", bin+".new", "./cmd/capsule")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building release %s: %v\n%s", release, err, out)
	}
	t.Logf("built release %s in %v (cached in %s)", release, time.Since(start).Round(time.Second), bin)
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// releaseNode is one node process of a given build.
type releaseNode struct {
	bin, dir, id, listen string
}

func startReleaseNode(t *testing.T, bin, dir string) *releaseNode {
	t.Helper()
	out, err := exec.Command(bin, "node", "id", "--data", dir).Output()
	if err != nil {
		t.Fatalf("%s node id: %v", bin, err)
	}
	n := &releaseNode{bin: bin, dir: dir, id: strings.TrimSpace(string(out))}
	p, err := nodeproc.Start(nodeproc.Config{Bin: bin, Data: dir, Listen: "127.0.0.1:0", ID: n.id, Log: dir + ".log",
		Args: []string{"--step-interval", stepInterval}, Wait: 15 * time.Second})
	if err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	n.listen = p.Listen
	t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.Exited
	})
	return n
}

func (n *releaseNode) cli(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.bin, args...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %v: %v\n%s%s", filepath.Base(filepath.Dir(n.bin)), args, err, out, stderr)
	}
	return string(out)
}

// running reports whether n lists agent id as running, as `agent list
// --json` of n's release prints it.
func (n *releaseNode) running(t *testing.T, id string) bool {
	t.Helper()
	var list []api.AgentStatus
	if err := json.Unmarshal([]byte(n.cli(t, "agent", "list", "--json", "--data", n.dir)), &list); err != nil {
		t.Fatalf("agent list --json: %v", err)
	}
	for _, a := range list {
		if a.ID == id {
			return a.State == api.StateRunning
		}
	}
	return false
}

// ISSUE 12 req 7, PROTOCOL §4b: a rolling upgrade with a real release
// 0.1.0 node built from git history. An agent created on 0.1.0 moves to a
// node of this build (which migrates on the target), back to 0.1.0 (which
// states no versions: this build sends the journal's down-converted view,
// its version-2 lines unchanged, the manifest saying journal 1), and on to
// this build again. Every move commits, the agent runs on one node at a
// time, and its journal verifies under both releases after each move.
func TestRollingUpgradeFrom010(t *testing.T) {
	if testing.Short() {
		t.Skip("builds release 0.1.0 and runs real nodes")
	}
	old := startReleaseNode(t, release010(t), filepath.Join(t.TempDir(), "old"))
	cur := startReleaseNode(t, capsuleBin, filepath.Join(t.TempDir(), "cur"))
	old.cli(t, "node", "peer", "add", cur.id, cur.listen, "--data", old.dir)
	cur.cli(t, "node", "peer", "add", old.id, old.listen, "--data", cur.dir)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("rolling upgrade\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st api.AgentStatus
	if err := json.Unmarshal([]byte(old.cli(t, "agent", "create", "--name", "upgrade", "--from", ws, "--json", "--data", old.dir)), &st); err != nil {
		t.Fatal(err)
	}
	id := st.ID
	from, to := old, cur
	for i := 0; i < 3; i++ {
		time.Sleep(200 * time.Millisecond) // a few steps on each holder
		var res api.MoveResult
		if err := json.Unmarshal([]byte(from.cli(t, "move", id, "--to", to.id, "--json", "--data", from.dir)), &res); err != nil {
			t.Fatal(err)
		}
		if res.Outcome != api.OutcomeCommitted {
			t.Fatalf("move %d (%s to %s): %+v", i+1, from.bin, to.bin, res)
		}
		waitRunning(t, to, id)
		if from.running(t, id) {
			t.Fatalf("move %d: the agent still runs on its source", i+1)
		}
		for _, n := range []*releaseNode{old, cur} {
			capDir := filepath.Join(to.dir, "agents", id, "capsule")
			// both releases read the journal the holder writes
			n.cli(t, "log", "verify", filepath.Join(capDir, "memory", "timeline_events.jsonl"))
		}
		from, to = to, from
	}
}

func waitRunning(t *testing.T, n *releaseNode, id string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n.running(t, id) {
			return
		}
	}
	t.Fatalf("agent %s does not run on %s:\n%s", id, n.id, n.cli(t, "agent", "list", "--data", n.dir))
}

// ISSUE 12 req 7: a ring of three nodes of three releases (0.1.0, 0.2.0
// and this build) that trust each other, an agent moved around it twice.
// After every move the agent runs on its target and not on its source, and
// the journal the target holds starts with every event the previous holder
// held (checked by id with this build's reader): nothing is lost on any
// edge of the ring, whichever way the versions go.
func TestMixedReleaseRing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds releases 0.1.0 and 0.2.0 and runs real nodes")
	}
	ring := []*releaseNode{
		startReleaseNode(t, release010(t), filepath.Join(t.TempDir(), "r010")),
		startReleaseNode(t, releaseAt(t, "0.2.0", commit020), filepath.Join(t.TempDir(), "r020")),
		startReleaseNode(t, capsuleBin, filepath.Join(t.TempDir(), "cur")),
	}
	for _, n := range ring {
		for _, p := range ring {
			if p != n {
				n.cli(t, "node", "peer", "add", p.id, p.listen, "--data", n.dir)
			}
		}
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("a ring of releases\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st api.AgentStatus
	if err := json.Unmarshal([]byte(ring[0].cli(t, "agent", "create", "--name", "ring", "--from", ws, "--json", "--data", ring[0].dir)), &st); err != nil {
		t.Fatal(err)
	}
	id := st.ID
	var held []string // event ids the previous holder held after its move
	for i := 0; i < 2*len(ring); i++ {
		from, to := ring[i%len(ring)], ring[(i+1)%len(ring)]
		time.Sleep(200 * time.Millisecond) // a few steps on each holder
		var res api.MoveResult
		if err := json.Unmarshal([]byte(from.cli(t, "move", id, "--to", to.id, "--json", "--data", from.dir)), &res); err != nil {
			t.Fatal(err)
		}
		if res.Outcome != api.OutcomeCommitted {
			t.Fatalf("move %d (%s to %s): %+v", i+1, from.dir, to.dir, res)
		}
		waitRunning(t, to, id)
		if from.running(t, id) {
			t.Fatalf("move %d: the agent still runs on its source %s", i+1, from.dir)
		}
		ids := journalIDs(t, filepath.Join(to.dir, "agents", id, "capsule", "memory", "timeline_events.jsonl"))
		if len(ids) < len(held) {
			t.Fatalf("move %d to %s: the journal holds %d events, the previous holder held %d", i+1, to.dir, len(ids), len(held))
		}
		for k := range held {
			if ids[k] != held[k] {
				t.Fatalf("move %d to %s: event %d is %s, the previous holder held %s there", i+1, to.dir, k+1, ids[k], held[k])
			}
		}
		held = ids
	}
}

// journalIDs returns the ids of a journal's events in file order, read by
// this build (`capsule log --json`).
func journalIDs(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command(capsuleBin, "log", path, "--json").Output()
	if err != nil {
		t.Fatalf("capsule log %s: %v", path, err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var e struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.ID == "" {
			t.Fatalf("capsule log %s: line %q: %v", path, line, err)
		}
		ids = append(ids, e.ID)
	}
	return ids
}
