package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// TestAgentCrashAndMove runs an LLM agent (the agent loop of real node
// processes, on the simulator run by `capsule model serve`, through a
// proxy that can hold a model call) and cuts it in the middle of its loop
// (issue 13, requirement 8): (a) SIGKILL during a model call, (b) SIGKILL
// during a tool, (c) a move between a tool call and its result, (d) model
// switches A -> B -> A across a move; and moves back to former holders
// that wrote the workspace. After each, afterRun checks the
// capsule, the journals, the requests and the workspace.
func TestAgentCrashAndMove(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real node processes; skipped with -short")
	}
	t.Run("KillDuringModelCall", testKillDuringModelCall)
	t.Run("KillDuringTool", testKillDuringTool)
	t.Run("MoveBetweenCallAndResult", testMoveBetweenCallAndResult)
	t.Run("SwitchAcrossMove", testSwitchAcrossMove)
	t.Run("MoveBackAfterWrite", testMoveBackAfterWrite)
}

// slowPattern makes search take seconds over bigWorkspace: it matches no
// line, and the regexp engine tries it at every byte.
const slowPattern = `(a|e)+[lm]+(o|e)+g?a?\s+zz+$`

// smallWorkspace is a project of two files.
func smallWorkspace(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src", "main.go"), "package main\n\n// TODO: greet the user\nfunc main() {}\n")
	writeFile(t, filepath.Join(dir, "README.md"), "A small project.\n")
	return dir
}

// bigFile is the file of bigWorkspace that search takes long over.
const bigFile = "data/big.txt"

// bigWorkspace is smallWorkspace with a text file of 7.5 MiB (under the
// tools' 8 MiB limit), for a search that runs long enough to be cut. The
// planner gives every tool of a request the same path=, so the test's
// tasks search bigFile and then overwrite it with write_file.
func bigWorkspace(t *testing.T) string {
	dir := smallWorkspace(t)
	line := "alpha beta gamma delta omega lorem ipsum dolor alpha beta gamma delta\n"
	writeFile(t, filepath.Join(dir, filepath.FromSlash(bigFile)), strings.Repeat(line, (15<<19)/len(line)))
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// (a) The node is killed while its model call is held in flight; after
// the restart the call is made again and nothing is journaled twice.
func testKillDuringModelCall(t *testing.T) {
	s := startSim(t)
	px := newHoldProxy(t, s.url)
	c := newClusterArgs(t, 1, px.nodeArgs())
	n1 := c.procs[0]
	arrived := px.hold()
	id := c.createLLMAgent(n1, smallWorkspace(t), claudePlanner,
		"Please read_file path=src/main.go, then write_file path=notes.txt content=done.")
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatalf("no model call reached the proxy within 30 s\n%s", tail(n1.log, 30))
	}
	before := liveEvents(t, n1, id)
	c.kill(n1)
	select {
	case <-px.gone():
	case <-time.After(10 * time.Second):
		t.Fatal("the held model call's connection outlived the killed node by 10 s")
	}
	if got := len(s.requests(t)); got != 0 {
		t.Fatalf("the simulator saw %d requests; the held one must not reach it", got)
	}
	if k := countKind(before, journal.KindToolCall) + countKind(before, journal.KindAssistant); k != 0 {
		t.Fatalf("the journal holds %d model outputs before the held call was answered", k)
	}
	c.restart(n1)
	c.waitAnswers(n1, id, 1)
	events := c.afterRun(n1, id, s)
	if got, want := px.posts(), len(s.requests(t))+1; got != want {
		t.Errorf("the proxy saw %d model calls, want the simulator's %d and the one cut", got, want-1)
	}
	if got := results(events, "write_file"); len(got) != 1 || got[0].IsError {
		t.Errorf("write_file results after the restart: %+v", got)
	}
	t.Logf("(a) %d events, %d model calls answered, one cut and repeated", len(events), len(s.requests(t)))
}

// (b) The node is killed while search runs; after the restart the call
// gets the explicit interrupted result, the model is told, the tool is
// not run again and the agent goes on to its next call.
func testKillDuringTool(t *testing.T) {
	s := startSim(t)
	px := newHoldProxy(t, s.url)
	c := newClusterArgs(t, 1, px.nodeArgs())
	n1 := c.procs[0]
	id := c.createLLMAgent(n1, bigWorkspace(t), claudePlanner,
		"Please search "+simArg("pattern", slowPattern)+" path="+bigFile+", then write_file content=continued.")
	if !waitFile(toolMark(n1, id), 30*time.Second) {
		t.Fatalf("no tool started within 30 s\n%s", tail(n1.log, 30))
	}
	c.kill(n1)
	if got := results(liveEvents(t, n1, id), "search"); len(got) != 0 {
		t.Fatalf("search finished before the kill (make it slower): %+v", got)
	}
	c.restart(n1)
	c.waitAnswers(n1, id, 1)
	events := c.afterRun(n1, id, s)
	got := results(events, "search")
	if len(got) != 1 || !got[0].IsError || got[0].Content != agent.InterruptedResult {
		t.Fatalf("search results: %+v, want one: the interrupted error", got)
	}
	told := false
	for _, r := range s.requests(t) {
		told = told || strings.Contains(string(r.Body), "the tool was not run again")
	}
	if !told {
		t.Error("no request told the model that the tool was interrupted")
	}
	if w := results(events, "write_file"); len(w) != 1 || w[0].IsError {
		t.Errorf("the agent did not go on to write_file: %+v", w)
	}
	t.Logf("(b) %d events; search answered as interrupted, write_file ran", len(events))
}

// (c) A move is asked for while the first of two calls of one model step
// runs (its call journaled, no result yet). Pre-copy does not wait for the
// tool; the freeze does (--tool-wait) and lands at the next step boundary:
// right after the search's result when pre-copy ended before the search
// did (write_file then runs on the target), or later, when the model call
// after both results is in flight (the freeze cancels it and the target
// makes it again). node.TestFreezeLandsBetweenToolSteps pins the first
// case deterministically; here, with real processes, either may happen,
// and what is pinned is: the move commits, the agent answers on the
// target, and nothing is lost or doubled.
func testMoveBetweenCallAndResult(t *testing.T) {
	s := startSim(t)
	px := newHoldProxy(t, s.url)
	c := newClusterArgs(t, 2, px.nodeArgs())
	n1, n2 := c.procs[0], c.procs[1]
	id := c.createLLMAgent(n1, bigWorkspace(t), claudePlanner,
		"Please search "+simArg("pattern", slowPattern)+" and write_file path="+bigFile+" content=target, in parallel.")
	if !waitFile(toolMark(n1, id), 30*time.Second) {
		t.Fatalf("no tool started within 30 s\n%s", tail(n1.log, 30))
	}
	px.hold() // the model call after the two results, on either node, waits
	if got := results(liveEvents(t, n1, id), "search"); len(got) != 0 {
		t.Fatalf("search finished before the move was asked for (make it slower): %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := c.move(ctx, n1, id, n2)
	if err != nil || res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move during the tool: %+v %v\n%s", res, err, tail(n1.log, 30))
	}
	px.letGo()
	c.waitAnswers(n2, id, 1)
	events := c.afterRun(n2, id, s)
	w := results(events, "write_file")
	if len(w) != 1 || w[0].IsError {
		t.Fatalf("write_file results: %+v", w)
	}
	if got := results(events, "search"); len(got) != 1 {
		t.Fatalf("search results: %+v", got)
	}
	if got := machineOf(events, journal.KindToolCall, w[0].CallID); got != n1.id {
		t.Errorf("write_file called by %s, want %s", c.nameOf(got), n1.name)
	}
	if got := lastOf(events, journal.KindAssistant); got != n2.id {
		t.Errorf("the answer was journaled by %s, want the target %s", c.nameOf(got), n2.name)
	}
	t.Logf("(c) %d events; calls on %s, write_file ran on %s, answer on %s", len(events), n1.name,
		c.nameOf(machineOf(events, journal.KindToolResult, w[0].CallID)), n2.name)
}

// lastOf returns the machine of the last event of kind k.
func lastOf(events []journal.Event, k journal.Kind) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == k {
			return events[i].Machine
		}
	}
	return ""
}

// (d) The agent works on model A, switches to B, moves, and switches back
// to A on the target: every request, A's replayed signed reasoning
// included, passes its provider's rules.
func testSwitchAcrossMove(t *testing.T) {
	s := startSim(t)
	px := newHoldProxy(t, s.url)
	c := newClusterArgs(t, 2, px.nodeArgs())
	n1, n2 := c.procs[0], c.procs[1]
	id := c.createLLMAgent(n1, smallWorkspace(t), claudePlanner, "Please read_file path=src/main.go.")
	c.waitAnswers(n1, id, 1)
	c.setModel(n1, id, responsesPlanner)
	c.say(n1, id, "Please list_files path=src, then write_file path=b.txt content=from-b.")
	c.waitAnswers(n1, id, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	res, err := c.move(ctx, n1, id, n2)
	cancel()
	if err != nil || res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v, %v", res, err)
	}
	c.setModel(n2, id, claudePlanner)
	c.say(n2, id, "Please edit_file path=src/main.go old_string=TODO new_string=DONE.")
	c.waitAnswers(n2, id, 3)
	events := c.afterRun(n2, id, s)
	apis := map[string]int{}
	for _, r := range s.requests(t) {
		apis[string(r.API)]++
	}
	if len(apis) < 2 {
		t.Errorf("the simulator saw the APIs %v, want two", apis)
	}
	if e := results(events, "edit_file"); len(e) != 1 || e[0].IsError {
		t.Errorf("edit_file on the target: %+v", e)
	}
	t.Logf("(d) %d events; requests per API %v", len(events), apis)
}

// Moves round a ring of three nodes, back to each node that held the
// agent and wrote its workspace while it did: such a node keeps its last
// workspace as the shadow of a move back (keepShadow), and without faults
// every move must commit at once. (Under the chaos faults a move back is
// sometimes refused once, "blob ... of the snapshot is missing"; this
// run without faults does not reproduce it.)
func testMoveBackAfterWrite(t *testing.T) {
	s := startSim(t)
	px := newHoldProxy(t, s.url)
	c := newClusterArgs(t, 3, px.nodeArgs())
	id := c.createLLMAgent(c.procs[0], smallWorkspace(t), claudePlanner, "Please write_file path=notes/w0.txt content=hop0.")
	c.waitAnswers(c.procs[0], id, 1)
	for hop := 1; hop <= 5; hop++ {
		from, to := c.procs[(hop-1)%3], c.procs[hop%3]
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res, err := c.move(ctx, from, id, to)
		cancel()
		if err != nil || res.Outcome != api.OutcomeCommitted {
			t.Fatalf("move %d, %s -> %s: %s %s (%v)", hop, from.name, to.name, res.Outcome, res.Reason, err)
		}
		c.say(to, id, fmt.Sprintf("Please write_file path=notes/w%d.txt content=hop%d.", hop, hop))
		c.waitAnswers(to, id, hop+1)
	}
	c.afterRun(c.procs[5%3], id, s)
}
