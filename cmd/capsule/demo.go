package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/spf13/cobra"
)

func init() { addCommand(newDemoCmd) }

// demoResult is what `capsule demo --json` prints.
type demoResult struct {
	Nodes     []api.NodeInfo `json:"nodes"`
	Agent     string         `json:"agent"`
	Simulator string         `json:"simulator"` // the endpoint's URL (loopback)
	DelayMS   int64          `json:"demo_delay_ms"`
	Task      string         `json:"task"`
	// SwitchedAfter and MovedAfter count the tool results journaled when
	// the demo switched the model and started the move.
	SwitchedAfter int            `json:"switched_after_tool_results"`
	MovedAfter    int            `json:"moved_after_tool_results"`
	Move          api.MoveResult `json:"move"`
	Phases        []demoPhase    `json:"phases"`
	Steps         []demoSteps    `json:"steps"`
	Requests      []demoRequests `json:"requests"`
	Refused       int            `json:"requests_refused"`
	// CancelledInDelay counts model requests whose caller went away
	// while the demo held them: they never reached the simulator.
	CancelledInDelay int  `json:"requests_cancelled_in_delay"`
	BugFixed         bool `json:"bug_fixed"`
	// TaskFinishedOn names the node that journaled the task's answer (the
	// end of its tool loop); AnsweredOn the node of the last answer.
	TaskFinishedOn string           `json:"task_finished_on"`
	Answer         string           `json:"answer"`
	AnsweredOn     string           `json:"answered_on"`
	Report         node.AgentReport `json:"report"`
	// Team is what the approved external call did and what the journal
	// holds of it.
	Team    demoTeamResult `json:"team"`
	DataDir string         `json:"data_dir,omitempty"`
}

// check says what of the demo's claims the run did not bear out: every
// request passed the simulator's rules and the bug is fixed on B.
func (r demoResult) check() error {
	switch {
	case r.Refused > 0:
		return fmt.Errorf("demo: the simulator refused %d requests", r.Refused)
	case !r.BugFixed:
		return errors.New("demo: calc.go is not fixed in the new holder's work folder")
	case r.Team.Posts != 1 || r.Team.FilePosts != 1:
		return fmt.Errorf("demo: the team channel got %d posts (%d in its file), want 1", r.Team.Posts, r.Team.FilePosts)
	case r.Team.Requests != 1 || r.Team.Approvals != 1 || r.Team.Dispatches != 1:
		return fmt.Errorf("demo: the journal holds %d approval requests, %d approvals and %d dispatches of call %s, want 1 each",
			r.Team.Requests, r.Team.Approvals, r.Team.Dispatches, r.Team.Call)
	}
	return nil
}

func newDemoCmd() *cobra.Command {
	var asJSON, keep bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Fix a bug with an agent that switches models and moves between two nodes",
		Long: `Start a model endpoint and two nodes in this process on loopback (127.0.0.1,
random ports) in temporary folders. Create an agent on the first node with a
small Go project whose test fails and the task of finding and fixing the bug
with the workspace tools; show its transcript live; switch its model from
OpenAI Chat Completions to Anthropic Messages in the middle of the task; move
it to the second node in the middle of its tool loop, where it finishes; on the
second node, ask it to check the fix, then to post to a team channel with
team.post, the tool of an MCP server (in this process, streamable HTTP) that
the agent's spec declares external with approval required: the agent waits,
the demo approves the call as an operator would (capsule agent approve), and
the agent dispatches it once. Then print the frozen window, the steps each node
took, the requests per API and model, whether calc.go is fixed, the team
channel's posts (exactly one), the journal's approval_request, approval and
tool_dispatch of the call, and the verification of the capsule and journal on
the new holder. It needs no account and no network beyond loopback.

What is simulated: the model. The endpoint is the simulator of provider/sim
(docs/SIMULATOR.md): capsule-sim/planner is a deterministic program, not a
language model. It calls the tools the newest user message names, in that
order, with the key=value arguments written in it, and answers by quoting the
results; it checks every request against the provider's rules and the
reasoning signatures it issued. The demo holds each request 150 ms before it
reaches the simulator so that a person can follow and the switch lands while
a step is in flight, and holds the request in flight while the move runs, so
that the freeze always cancels a model call (a real model would still be
generating). Everything else is real: the agent loop, the
provider clients, the tools on the workspace, the MCP client and server, the
approval and the dispatch journaled before the call, two nodes with mutual
TLS, the two-phase move. The demo does not run go test (it needs no Go toolchain): it
reads calc.go on the new holder.`,
		Example: `  capsule demo
  capsule demo --json
  go run ./cmd/capsule demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := os.MkdirTemp("", "capsule-demo-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			out := cmd.OutOrStdout()
			w := out
			if asJSON {
				w = io.Discard
			}
			res, err := runDemo(ctx, dir, w)
			if keep {
				res.DataDir = dir
				fmt.Fprintf(w, "data kept in %s\n", dir)
			}
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(out, res); err != nil {
					return err
				}
			}
			if !res.Report.OK() {
				return verifyError{errors.New("demo: the agent's capsule did not verify on the new holder")}
			}
			return res.check()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&keep, "keep", false, "keep the nodes' data folders and print where")
	return c
}

// demoModels: the model the agent starts with and the one it is switched
// to on the first node.
var (
	demoStart  = api.ModelRef{Provider: "openai", API: "chat", Model: sim.Planner}
	demoSwitch = api.ModelRequest{Provider: "anthropic", API: "messages", Model: sim.Planner}
)

// demoRewatch is how often the demo opens the watch on the second node
// again (see transcript.follow).
const demoRewatch = 100 * time.Millisecond

// demoRun is one run of the demo.
type demoRun struct {
	out   *console
	ep    *demoEndpoint
	team  *demoTeam
	nodes []*node.Node
	names map[string]string // machine ID -> A or B
	tr    *transcript
	res   demoResult
	id    string
}

func runDemo(ctx context.Context, dir string, w io.Writer) (demoResult, error) {
	d := &demoRun{out: &console{w: w}, names: map[string]string{}}
	ep, err := startDemoEndpoint()
	if err != nil {
		return d.res, err
	}
	defer ep.Close()
	d.ep = ep
	if d.team, err = startDemoTeam(filepath.Join(dir, "team-channel.txt")); err != nil {
		return d.res, err
	}
	defer d.team.Close()
	if d.nodes, err = startDemoNodes(dir, ep.url); err != nil {
		return d.res, err
	}
	defer func() {
		for _, n := range d.nodes {
			_ = n.Close(context.Background())
		}
	}()
	d.tr = newTranscript(d.out, d.label)
	err = d.run(ctx, filepath.Join(dir, "workspace"))
	if err == nil {
		err = d.tr.err
	}
	return d.res, err
}

func (d *demoRun) label(machine string) string {
	if n, ok := d.names[machine]; ok {
		return n
	}
	return short(machine)
}

func (d *demoRun) run(ctx context.Context, ws string) error {
	d.intro(ctx)
	if err := d.create(ctx, ws); err != nil {
		return err
	}
	a, b := d.nodes[0], d.nodes[1]
	stopA := d.tr.follow(ctx, a, "A", d.id, 0)
	err := d.switchAndMove(ctx)
	if err == nil {
		_ = waitUntil(ctx, "A to say the agent moved", func() bool { _, _, moved := d.tr.counts(); return moved })
	}
	stopA()
	if err != nil {
		return err
	}
	stopB := d.tr.follow(ctx, b, "B", d.id, demoRewatch)
	err = d.finishOnB(ctx)
	if err == nil {
		err = d.teamTurn(ctx)
	}
	stopB()
	if err != nil {
		return err
	}
	return d.conclude(ctx)
}

func (d *demoRun) intro(ctx context.Context) {
	say := d.out.say
	d.res.Simulator, d.res.DelayMS = d.ep.url, demoDelay.Milliseconds()
	say("Capsule demo: one agent fixes a bug, switches models mid-task and moves between two nodes mid-tool-loop.")
	say("Model endpoint: %s, a SIMULATOR (provider/sim, docs/SIMULATOR.md). capsule-sim/planner is a deterministic program, not a language model:", d.ep.url)
	say("  it calls the tools the newest user message names, in that order, with the key=value arguments written there, and answers by quoting the results;")
	say("  it speaks each provider's wire protocol, refuses any request that breaks the provider's rules and checks the reasoning signatures it issued.")
	say("  The demo holds each request %d ms before the simulator sees it (the delay is the demo's, not the simulator's), so that you can follow along.", demoDelay.Milliseconds())
	for i, n := range d.nodes {
		info, _ := n.Info(ctx)
		name := string(rune('A' + i))
		d.names[info.ID] = name
		d.res.Nodes = append(d.res.Nodes, info)
		say("Node %s  %s  listening on %s (mutual TLS, IDs pinned)", name, info.ID, info.Listen)
	}
}

func (d *demoRun) create(ctx context.Context, ws string) error {
	if err := writeDemoWorkspace(ws); err != nil {
		return err
	}
	d.res.Task = demoTask
	spec, err := d.team.spec()
	if err != nil {
		return err
	}
	st, err := d.nodes[0].CreateAgent(ctx, api.CreateAgentRequest{Name: "demo", From: ws, Model: &demoStart, Task: demoTask, Spec: spec})
	if err != nil {
		return err
	}
	d.id, d.res.Agent = st.ID, st.ID
	d.out.say("Created agent %s on A from a Go project (calc.go, calc_test.go: TestAdd fails because Add subtracts), model %s/%s %s.",
		st.ID, demoStart.Provider, demoStart.API, demoStart.Model)
	d.out.say("Its spec names one MCP server, %q at %s (in this process, streamable HTTP): its tool %s.%s posts to a team channel kept outside every workspace;",
		demoTeamName, d.team.url, demoTeamName, demoTeamTool)
	d.out.say("  the spec declares it external with approval required, so each call waits for a person's approval and is dispatched at most once.")
	d.out.say("Transcript (live, from the nodes' watch streams):")
	return nil
}

// switchAndMove switches the model once the first tool result is in and
// the next model request is in flight (so the switch lands between two
// steps), then moves the agent to B once the second result is in and the
// third model request is in flight, with tool calls still to make.
func (d *demoRun) switchAndMove(ctx context.Context) error {
	a, b := d.nodes[0], d.nodes[1]
	if err := d.waitStep(ctx, 1, 2); err != nil {
		return err
	}
	d.res.SwitchedAfter, _, _ = d.tr.counts()
	d.out.say("-- demo: switching the model to %s/%s %s (Node.SetModel); the request in flight finishes on OpenAI, the next step goes to Anthropic --",
		demoSwitch.Provider, demoSwitch.API, demoSwitch.Model)
	if _, err := a.SetModel(ctx, d.id, demoSwitch); err != nil {
		return err
	}
	d.out.say("-- demo: (Anthropic requires thinking to lead a turn's first assistant message; this turn began on OpenAI without it, so its Anthropic steps do not think) --")
	if err := d.waitStep(ctx, 2, 3); err != nil {
		return err
	}
	d.res.MovedAfter, _, _ = d.tr.counts()
	d.out.say("-- demo: moving the agent to B (Node.Move) in the middle of its tool loop: a model request is in flight and edit_file is still to come;")
	d.out.say("   the demo holds that request at the endpoint until the move ends, so the freeze always lands in the middle of the step --")
	phases := startClock()
	release := d.ep.hold()
	m, err := a.Move(ctx, d.id, api.MoveRequest{To: string(b.ID())}, phases.observe)
	release()
	d.res.Move, d.res.Phases = m, phases.end()
	if err != nil {
		return err
	}
	if m.Outcome != api.OutcomeCommitted {
		return fmt.Errorf("demo: the move did not commit: %s", m.Reason)
	}
	d.out.say("-- demo: move %s committed at epoch %d; frozen %d ms; %d model call(s) in flight cancelled by the freeze, to be made again on B --",
		m.MoveID, m.Epoch, m.FrozenMS, m.CancelledModelCalls)
	return nil
}

// waitStep waits until the transcript shows results tool results and the
// endpoint has received requests model requests.
func (d *demoRun) waitStep(ctx context.Context, results, requests int) error {
	return waitUntil(ctx, fmt.Sprintf("tool result %d and model request %d", results, requests), func() bool {
		r, _, _ := d.tr.counts()
		got, _ := d.ep.counts()
		return r >= results && got >= requests
	})
}

// finishOnB waits for the answer on B, then asks the agent, still on
// Anthropic, to read the file again to check its fix: a turn that starts
// on Anthropic, so it thinks and signs its thinking.
func (d *demoRun) finishOnB(ctx context.Context) error {
	b := d.nodes[1]
	if err := d.waitAnswers(ctx, b, 1); err != nil {
		return err
	}
	d.out.say("-- demo: on B, a new turn on %s/%s: thinking leads it, so the model thinks and signs; the simulator checks the signature when the thinking is replayed --",
		demoSwitch.Provider, demoSwitch.API)
	if _, err := b.Say(ctx, d.id, api.SayRequest{Text: demoCheck}); err != nil {
		return err
	}
	return d.waitAnswers(ctx, b, 2)
}

// waitAnswers waits until the transcript shows k answers and n reports
// the agent idle.
func (d *demoRun) waitAnswers(ctx context.Context, n *node.Node, k int) error {
	return waitUntil(ctx, fmt.Sprintf("answer %d on %s", k, n.ID()), func() bool {
		if _, answers, _ := d.tr.counts(); answers < k {
			return false
		}
		st, err := n.Agent(ctx, d.id)
		return err == nil && st.Activity == "idle"
	})
}

func startDemoNodes(dir, endpoint string) ([]*node.Node, error) {
	var nodes []*node.Node
	for _, name := range []string{"a", "b"} {
		n, err := node.New(node.Config{Dir: filepath.Join(dir, name), Listen: "127.0.0.1:0", Socket: "-",
			StepInterval: 20 * time.Millisecond, RetryInterval: 50 * time.Millisecond, Commit: buildCommit(),
			ModelEndpoint: endpoint})
		if err == nil {
			err = n.Start()
		}
		if err != nil {
			for _, x := range nodes {
				_ = x.Close(context.Background())
			}
			return nil, err
		}
		nodes = append(nodes, n)
	}
	for _, x := range nodes {
		for _, y := range nodes {
			if x != y {
				if err := x.AddPeer(context.Background(), api.Peer{ID: string(y.ID()), Addr: y.Addr()}); err != nil {
					return nodes, err
				}
			}
		}
	}
	return nodes, nil
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
