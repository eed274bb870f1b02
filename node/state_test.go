package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/google/go-cmp/cmp"
)

// Tests of what a node says about an agent and when it refuses to run it
// (docs/PROTOCOL.md §5, §7.3).

// statusView is the part of an AgentStatus these tests compare.
type statusView struct {
	State, Holder, Successor string
	Epoch                    uint64
	Move                     bool
}

func viewOf(st api.AgentStatus) statusView {
	return statusView{State: st.State, Holder: st.Holder, Successor: st.Successor, Epoch: st.Epoch, Move: st.Move != nil}
}

func agentStatus(t *testing.T, n *Node, id string) api.AgentStatus {
	t.Helper()
	st, err := n.Agent(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func listed(t *testing.T, n *Node, id string) api.AgentStatus {
	t.Helper()
	list, err := n.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range list {
		if st.ID == id {
			return st
		}
	}
	t.Fatalf("agent %s not in the list of %s", id, n.ID().Short())
	return api.AgentStatus{}
}

// After A -> B -> A, A's status comes from its holder record (A at epoch
// 3) and its current move (none), not from the committed first leg: it
// names A as holder, no successor, and `stop` leaves it stopped, not
// frozen (issue 10 item 1). B, which moved it on, shows it retired with A
// as successor.
func TestStatusAfterRoundTrip(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, "")
	moveThereAndBack(t, a, b, id)

	self := string(a.ID())
	want := statusView{State: api.StateRunning, Holder: self, Epoch: 3}
	if diff := cmp.Diff(want, viewOf(agentStatus(t, a, id))); diff != "" {
		t.Errorf("A's status after the round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, viewOf(listed(t, a, id))); diff != "" {
		t.Errorf("A's list entry after the round trip (-want +got):\n%s", diff)
	}
	st, err := a.StopAgent(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want.State = api.StateStopped
	if diff := cmp.Diff(want, viewOf(st)); diff != "" {
		t.Errorf("A's status after stop (-want +got):\n%s", diff)
	}
	wantB := statusView{State: api.StateRetired, Holder: self, Successor: self, Epoch: 3, Move: true}
	if diff := cmp.Diff(wantB, viewOf(agentStatus(t, b, id))); diff != "" {
		t.Errorf("B's status (-want +got):\n%s", diff)
	}
	info, err := a.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	infoB, err := b.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Agents != 1 || infoB.Agents != 0 {
		t.Errorf("hosted agents: A %d, B %d; want 1 and 0 (a retired copy is not hosted)", info.Agents, infoB.Agents)
	}
}

// sourceIsHistory and mayReplay decide from the target record alone
// whether this node's latest source record still matters (issue 10 items
// 1 and 8): it is history once the agent is held again at or above its
// epoch; the highest epoch seen stops its replay once the agent was
// released, never while it is held.
func TestSourceIsHistory(t *testing.T) {
	retired := transfer.SourceState{Holder: 1, Epoch: 2, Phase: transfer.RecRetired}
	tests := []struct {
		name            string
		holder, maxSeen uint64
		history, replay bool
	}{
		{"released, nothing seen since: retire again", 0, 2, false, true},
		{"released, a move back promised epoch 3: names the successor, not replayed", 0, 3, false, false},
		{"held at the old epoch: the move is current", 1, 1, false, true},
		{"held at the old epoch, epochs burned meanwhile: still current", 1, 5, false, true},
		{"held again at epoch 3", 3, 3, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := targetAt(t, tc.holder, tc.maxSeen)
			if got := sourceIsHistory(retired, tg); got != tc.history {
				t.Errorf("sourceIsHistory(epoch 2, target holder %d max %d) = %v, want %v", tc.holder, tc.maxSeen, got, tc.history)
			}
			if got := mayReplay(retired, tg); got != tc.replay {
				t.Errorf("mayReplay(epoch 2, target holder %d max %d) = %v, want %v", tc.holder, tc.maxSeen, got, tc.replay)
			}
		})
	}
}

// targetAt rebuilds a Target holding the agent at holder (0: none) that
// has seen maxSeen.
func targetAt(t *testing.T, holder, maxSeen uint64) *transfer.Target {
	t.Helper()
	st := transfer.TargetState{Agent: "agent", Self: "node", MaxEpoch: maxSeen, Holder: holder}
	tg, err := transfer.RecoverTarget([]transfer.Record{{Kind: transfer.RecAdopted, Agent: "agent", Target: &st}})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// treeOf maps every path below dir to its content (regular files) or its
// type (folders, sockets, links), so a diff shows what was created.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !fi.Mode().IsRegular() {
			out[rel] = fi.Mode().Type().String() // folders, sockets, links: present, of this type
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A holder.jsonl whose last bytes are cut, on a node the agent left and
// came back to: the record left (PREPARED at epoch 3) no longer holds the
// agent, and the source record of the first leg (RETIRED) used to be
// replayed, deleting the live capsule and workspace. The node must block
// the agent with the reason and keep every byte (issue 10 item 8).
func TestDamagedHolderRecordBlocksAndKeepsAll(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	c := &cluster{t: t, nodes: []*Node{newNode(t, dirs[0], nodeOpts{}), newNode(t, dirs[1], nodeOpts{})}}
	c.link()
	a, b := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, "")
	moveThereAndBack(t, a, b, id)
	if _, err := a.StopAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	agentDir := filepath.Join(dirs[0], "agents", id)
	holder := filepath.Join(agentDir, record.HolderFile)
	data, err := os.ReadFile(holder)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(holder, data[:len(data)-7], 0o600); err != nil {
		t.Fatal(err)
	}
	capBefore, workBefore := treeOf(t, filepath.Join(agentDir, capsuleDir)), treeOf(t, filepath.Join(agentDir, workDir))

	a = newNode(t, dirs[0], nodeOpts{})
	time.Sleep(50 * time.Millisecond) // a runner, had one started, would have stepped
	st := agentStatus(t, a, id)
	if st.State != api.StateBlocked || !strings.Contains(st.Blocked, "holder record older than the capsule") {
		t.Errorf("status after the damage: state %q, blocked %q; want blocked with the reason", st.State, st.Blocked)
	}
	if got := listed(t, a, id); got.State != api.StateBlocked || got.Blocked == "" {
		t.Errorf("list entry after the damage: state %q, blocked %q", got.State, got.Blocked)
	}
	if diff := cmp.Diff(capBefore, treeOf(t, filepath.Join(agentDir, capsuleDir))); diff != "" {
		t.Errorf("capsule/ changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(workBefore, treeOf(t, filepath.Join(agentDir, workDir))); diff != "" {
		t.Errorf("work/ changed (-before +after):\n%s", diff)
	}
	if _, err := a.StartAgent(context.Background(), id); !errors.Is(err, api.ErrConflict) {
		t.Errorf("start of the blocked agent: %v, want a conflict", err)
	}
}

// stoppedAgent creates an agent on a node in a fresh data folder, lets it
// step, stops it (a commit) and closes the node. It returns the data
// folder and the agent ID.
func stoppedAgent(t *testing.T) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "n")
	n := newNode(t, dir, nodeOpts{})
	id := createAgent(t, n, "")
	if _, err := n.StopAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir, id
}

func capsulePath(dir, id string, elem ...string) string {
	return filepath.Join(append([]string{dir, "agents", id, capsuleDir}, elem...)...)
}

func readEvents(t *testing.T, path string) []journal.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events, err := journal.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func writeEvents(t *testing.T, path string, events []journal.Event) {
	t.Helper()
	var b bytes.Buffer
	for _, e := range events {
		b.Write(journal.Encode(e))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func seal(t *testing.T, e *journal.Event) {
	t.Helper()
	if err := journal.Seal(e); err != nil {
		t.Fatal(err)
	}
}

// forgeResult rewrites the content of the k-th counter result with the
// same length and re-seals it and every later event of its machine, so
// that every id and chain link checks out and only the manifest's digest
// of the committed prefix can tell.
func forgeResult(t *testing.T, events []journal.Event, k int) {
	t.Helper()
	seen, at := 0, -1
	for i, e := range events {
		if e.Kind == journal.KindToolResult {
			if seen++; seen == k {
				at = i
				break
			}
		}
	}
	if at < 0 {
		t.Fatalf("no counter result %d in %d events", k, len(events))
	}
	e := &events[at]
	var r journal.ToolResult
	if err := jsonUnmarshal(e.Body, &r); err != nil {
		t.Fatal(err)
	}
	body := bytes.Replace(e.Body, []byte(`"content":"`+r.Content+`"`), []byte(`"content":"`+strings.Repeat("9", len(r.Content))+`"`), 1)
	if bytes.Equal(body, e.Body) {
		t.Fatalf("forge: content %q not found in %s", r.Content, e.Body)
	}
	e.Body = body
	seal(t, e)
	prev := e.ID
	for i := at + 1; i < len(events); i++ {
		if events[i].Machine == e.Machine {
			events[i].Prev = prev
			seal(t, &events[i])
			prev = events[i].ID
		}
	}
}

// A hosted capsule whose committed journal was rewritten in the middle,
// every later event re-hashed: the chain checks out, the manifest's digest
// of the committed prefix does not. The node must refuse to run it (and
// so never commit a manifest over the forged event), and say why (issue
// 10 items 9 and 10).
func TestForgedCommittedJournalIsRefused(t *testing.T) {
	dir, id := stoppedAgent(t)
	jpath := capsulePath(dir, id, journalInCap)
	events := readEvents(t, jpath)
	forgeResult(t, events, 2)
	writeEvents(t, jpath, events)
	if p := journal.Verify(events); len(p) > 0 {
		t.Fatalf("the forged journal does not chain: %v", p)
	}
	manifestBefore, err := os.ReadFile(capsulePath(dir, id, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}

	n := newNode(t, dir, nodeOpts{})
	if _, err := n.StartAgent(context.Background(), id); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "journal refused") {
		t.Errorf("start of the forged agent: %v, want a conflict naming the refused journal", err)
	}
	time.Sleep(50 * time.Millisecond)
	st := agentStatus(t, n, id)
	if st.State != api.StateBlocked || !strings.Contains(st.Blocked, "hash to") {
		t.Errorf("status: state %q, blocked %q; want blocked naming the digest mismatch", st.State, st.Blocked)
	}
	if got := c0Running(n, id); got {
		t.Error("the node runs the forged agent")
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	manifestAfter, err := os.ReadFile(capsulePath(dir, id, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(manifestBefore, manifestAfter) {
		t.Error("the node committed a new manifest over the forged journal")
	}
	rep, err := capsule.Verify(n.fsys, capsulePath(dir, id), capsule.VerifyOptions{})
	if err != nil || rep.OK() {
		t.Errorf("capsule verify of the forged capsule: %v, ok %v; want it to fail", err, rep != nil && rep.OK())
	}
}

func c0Running(n *Node, id string) bool {
	a, err := n.getTenant(id)
	if err != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.run != nil
}

// nextEvent returns an event of machine that continues events, under epoch.
func nextEvent(t *testing.T, events []journal.Event, epoch uint64, change func(*journal.Event)) journal.Event {
	t.Helper()
	last := events[len(events)-1]
	e := journal.Event{Machine: last.Machine, Seq: last.Seq + 1, Prev: last.ID, Clock: last.Clock + 1, Epoch: epoch, V: last.V,
		Kind: journal.KindFrozen, Body: []byte(`{"reason":"forged"}`)}
	if change != nil {
		change(&e)
	}
	seal(t, &e)
	return e
}

// Every journal the node refuses to open or append to leaves the agent
// blocked with the reason, in status and list, after a restart (the agent
// was stopped: the node checks the journal of every agent it holds) and
// after `agent start` alike (issue 10 item 10).
func TestRefusedJournalShowsBlocked(t *testing.T) {
	tests := []struct {
		name   string
		tail   func(t *testing.T, events []journal.Event) []journal.Event
		reason string
	}{
		{"wrong prev", func(t *testing.T, events []journal.Event) []journal.Event {
			return []journal.Event{nextEvent(t, events, events[len(events)-1].Epoch, func(e *journal.Event) { e.Prev = string(events[0].ID) })}
		}, "journal refused"},
		{"bad id", func(t *testing.T, events []journal.Event) []journal.Event {
			bad := nextEvent(t, events, events[len(events)-1].Epoch, nil)
			bad.ID = events[0].ID
			after := nextEvent(t, append(events, bad), bad.Epoch, nil)
			return []journal.Event{bad, after}
		}, "journal refused"},
		{"future epoch", func(t *testing.T, events []journal.Event) []journal.Event {
			return []journal.Event{nextEvent(t, events, 9, nil)}
		}, "above the holder epoch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, id := stoppedAgent(t)
			jpath := capsulePath(dir, id, journalInCap)
			events := readEvents(t, jpath)
			writeEvents(t, jpath, append(events, tc.tail(t, events)...))

			n := newNode(t, dir, nodeOpts{})
			st := agentStatus(t, n, id)
			if st.State != api.StateBlocked || !strings.Contains(st.Blocked, tc.reason) || st.Error == "" {
				t.Errorf("status after restart: state %q, blocked %q, error %q; want blocked, %q", st.State, st.Blocked, st.Error, tc.reason)
			}
			if got := listed(t, n, id); got.State != api.StateBlocked || got.Blocked == "" {
				t.Errorf("list entry: state %q, blocked %q", got.State, got.Blocked)
			}
			if _, err := n.StartAgent(context.Background(), id); !errors.Is(err, api.ErrConflict) {
				t.Errorf("agent start: %v, want a conflict", err)
			}
			if st := agentStatus(t, n, id); st.State != api.StateBlocked || !strings.Contains(st.Blocked, tc.reason) {
				t.Errorf("status after agent start: state %q, blocked %q", st.State, st.Blocked)
			}
		})
	}
}

// A journal already open when the agent is started again at a new epoch is
// fenced at that epoch: an append under the old epoch is refused (issue 18
// item 4), even before anything is appended under the new one.
func TestOpenJournalRefencedAtNewEpoch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	n := newNode(t, dir, nodeOpts{})
	st, err := n.CreateAgent(context.Background(), api.CreateAgentRequest{Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	a, err := n.getTenant(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.log == nil {
		t.Fatal("the new agent's journal is not open")
	}
	if _, err := a.stepTarget(transfer.Input{Kind: transfer.InAdopt, Epoch: 4}); err != nil {
		t.Fatal(err)
	}
	epoch, ok := a.mayRun()
	if !ok || epoch != 4 {
		t.Fatalf("mayRun after adopting epoch 4: %d, %v", epoch, ok)
	}
	if err := a.openLog(epoch); err != nil {
		t.Fatal(err)
	}
	_, err = a.log.Append(journal.KindFrozen, 1, a.n.wallTime(), journal.Frozen{Reason: "old epoch"})
	if !errors.Is(err, journal.ErrStaleEpoch) {
		t.Errorf("append under epoch 1 after the restart at epoch 4: %v, want %v", err, journal.ErrStaleEpoch)
	}
	if _, err := a.log.Append(journal.KindFrozen, 4, a.n.wallTime(), journal.Frozen{Reason: "new epoch"}); err != nil {
		t.Errorf("append under epoch 4: %v", err)
	}
}

// A node that retired the agent and finds a capsule folder whose manifest
// does not read cannot tell whether it is newer than its records: it
// blocks the agent and keeps the folder, rather than replaying the retire
// over it (issue 10 item 8).
func TestUnreadableCapsuleOnRetiredNodeBlocks(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	c := &cluster{t: t, nodes: []*Node{newNode(t, dirs[0], nodeOpts{}), newNode(t, dirs[1], nodeOpts{})}}
	c.link()
	a, b := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, "")
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move A -> B: %+v", res)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	capDir := filepath.Join(dirs[0], "agents", id, capsuleDir)
	if err := os.MkdirAll(capDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(capDir, "manifest.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, capDir)
	a = newNode(t, dirs[0], nodeOpts{})
	if st := agentStatus(t, a, id); st.State != api.StateBlocked || !strings.Contains(st.Blocked, "does not read") {
		t.Errorf("status: state %q, blocked %q; want blocked", st.State, st.Blocked)
	}
	if diff := cmp.Diff(before, treeOf(t, capDir)); diff != "" {
		t.Errorf("capsule/ changed (-before +after):\n%s", diff)
	}
}
