package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node"
)

// conclude stops the agent on B and gathers and prints the figures: the
// move, each node's steps, the simulator's requests, the fix and the
// verification.
func (d *demoRun) conclude(ctx context.Context) error {
	a, b := d.nodes[0], d.nodes[1]
	if _, err := b.StopAgent(ctx, d.id); err != nil {
		return err
	}
	rep, err := b.Report(d.id, 0)
	if err != nil {
		return err
	}
	d.res.Report = rep
	events, err := readDemoJournal(rep.Capsule)
	if err != nil {
		return err
	}
	d.res.Steps = stepsByNode(events, []string{string(a.ID()), string(b.ID())}, []string{"A", "B"})
	d.res.Requests = requestsByModel(d.ep.sim.Requests())
	for _, r := range d.res.Requests {
		d.res.Refused += r.Refused
	}
	_, d.res.CancelledInDelay = d.ep.counts()
	var machine string
	d.res.Answer, machine = lastAnswer(events)
	d.res.AnsweredOn = d.label(machine)
	d.res.TaskFinishedOn = d.label(firstAnswerMachine(events))
	if d.res.BugFixed, err = bugFixed(filepath.Join(filepath.Dir(rep.Capsule), "work")); err != nil {
		return err
	}
	if err := d.teamFigures(events); err != nil {
		return err
	}
	d.print()
	return nil
}

func (d *demoRun) print() {
	say, r, m := d.out.say, &d.res, d.res.Move
	say("")
	say("The move (switched model after tool result %d, started the move after tool result %d):", r.SwitchedAfter, r.MovedAfter)
	say("  %s at epoch %d, %s sent in all (%d blobs, %d skipped as already there), %d pre-copy rounds.",
		m.Outcome, m.Epoch, humanBytes(m.BytesSent), m.BlobsSent, m.BlobsSkipped, m.PrecopyRounds)
	printPhases(say, r.Phases)
	say("  Frozen window: %d ms (freeze on A to running on B), %s sent inside it, %d round trips while frozen.",
		m.FrozenMS, humanBytes(m.WindowBytes), m.RoundTripsFrozen)
	say("  Model calls the freeze cancelled: %d (not journaled on A; B made them again). Requests cancelled while the demo held them, never seen by the simulator: %d.",
		m.CancelledModelCalls, r.CancelledInDelay)
	say("Steps on each node, from the journal (a model step is one generation; a tool step is one tool result):")
	for _, s := range r.Steps {
		say("  node %s: %d model steps (%s), %d tool steps (%s)", s.Node, s.ModelSteps, byModel(s.ByModel), s.ToolSteps, strings.Join(s.Tools, ", "))
	}
	say("Requests the simulator received, per API and model:")
	for _, q := range r.Requests {
		say("  %-12s %-22s %d (refused %d)", q.API, q.Model, q.Count, q.Refused)
	}
	say("  %d refused in all.", r.Refused)
	fixed := "NOT fixed"
	if r.BugFixed {
		fixed = "fixed"
	}
	say("The bug on B: calc.go in B's work folder is %s (%q in Add). The demo does not run go test: it needs no Go toolchain.", fixed, demoFix)
	printTeam(say, r.Team)
	say("The task's tool loop ended with an answer journaled on %s; the last answer, journaled on %s: %s", r.TaskFinishedOn, r.AnsweredOn, clipLine(r.Answer))
	printReport(say, r.Report, d.label)
}

// byModel lists model step counts by model, in a fixed order.
func byModel(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d by %s", m[k], k)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func printReport(say func(string, ...any), r node.AgentReport, label func(string) string) {
	verdict := "verifies"
	if !r.OK() {
		verdict = "DOES NOT verify"
	}
	machines := make([]string, 0, len(r.EventsByMachine))
	for m, k := range r.EventsByMachine {
		machines = append(machines, fmt.Sprintf("%d by %s", k, label(m)))
	}
	sort.Strings(machines)
	say("Verification on B, after stopping the agent: the capsule %s (%d problems: every digest checked); the journal's %d events (%s) have intact hash chains, epochs %v.",
		verdict, len(r.Problems), r.Events, strings.Join(machines, ", "), r.Epochs)
	for _, p := range r.Problems {
		say("  problem: %s", p)
	}
}

// teamFigures fills in what the team call did, from the channel and the
// journal.
func (d *demoRun) teamFigures(events []journal.Event) error {
	t := &d.res.Team
	t.Channel = d.team.channel()
	t.Posts = len(t.Channel)
	var err error
	if t.FilePosts, err = fileLines(d.team.file); err != nil {
		return err
	}
	countCall(events, t.Call, t)
	return nil
}

func printTeam(say func(string, ...any), t demoTeamResult) {
	say("The external tool: the team channel got %d post(s) (%d line(s) in its file, outside every workspace): %s",
		t.Posts, t.FilePosts, clipLine(strings.Join(t.Channel, " | ")))
	say("  The journal holds, for call %s: %d approval_request, %d approval, %d tool_dispatch, %d tool_result.",
		t.Call, t.Requests, t.Approvals, t.Dispatches, t.Results)
}
