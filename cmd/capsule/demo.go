package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node"
	"github.com/spf13/cobra"
)

func init() { addCommand(newDemoCmd) }

// demoResult is what `capsule demo --json` prints.
type demoResult struct {
	Nodes       []api.NodeInfo   `json:"nodes"`
	Agent       string           `json:"agent"`
	StepsBefore uint64           `json:"steps_before_move"`
	Move        api.MoveResult   `json:"move"`
	Phases      []demoPhase      `json:"phases"`
	StepsAfter  uint64           `json:"steps_after_move"`
	Report      node.AgentReport `json:"report"`
	DataDir     string           `json:"data_dir,omitempty"`
}

func newDemoCmd() *cobra.Command {
	var asJSON, keep bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Move a running agent between two nodes on this machine and check it",
		Long: `Start two nodes in this process on loopback (127.0.0.1, random ports) in
temporary folders, create an agent with a small workspace on the first, let
it work, move it to the second while it works, and verify the capsule and
the journal on the new holder: every digest, every hash chain, and the
built-in runner's counter against the steps it journaled (no step lost, none
run twice). It needs no network beyond loopback and no account.

What is simulated: the agent's work. No model is called. The node's
built-in runner stands in for one: each step it counts in counter.txt, logs
to steps.log and journals a tool call and its result. The agent names a
model (ollama/llama3.2) only so that the target renders the journal into the
request that model would get, as every move's prepare does; that request is
measured and thrown away, never sent. The move itself is real: two nodes,
mutual TLS, the two-phase commit, every byte counted.`,
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
			out := cmd.OutOrStdout()
			say := func(format string, a ...any) {
				if !asJSON {
					fmt.Fprintf(out, format+"\n", a...)
				}
			}
			res, err := runDemo(cmd.Context(), dir, say)
			if keep {
				res.DataDir = dir
				say("data kept in %s", dir)
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
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&keep, "keep", false, "keep the nodes' data folders and print where")
	return c
}

func runDemo(ctx context.Context, dir string, say func(string, ...any)) (demoResult, error) {
	var res demoResult
	nodes, err := startDemoNodes(dir)
	if err != nil {
		return res, err
	}
	defer func() {
		for _, n := range nodes {
			_ = n.Close(context.Background())
		}
	}()
	a, b := nodes[0], nodes[1]
	say("Capsule demo: two nodes on loopback, one agent, one move.")
	for i, n := range nodes {
		info, _ := n.Info(ctx)
		res.Nodes = append(res.Nodes, info)
		say("  node %c  %s  listening on %s (mutual TLS, IDs pinned)", 'A'+i, info.ID, info.Listen)
	}
	ws := filepath.Join(dir, "workspace")
	if err := writeDemoWorkspace(ws); err != nil {
		return res, err
	}
	st, err := a.CreateAgent(ctx, api.CreateAgentRequest{Name: "demo", From: ws, Model: &demoModel})
	if err != nil {
		return res, err
	}
	res.Agent = st.ID
	say("Created agent %s on A (epoch 1) from a 3-file workspace.", st.ID)
	say("Its work is simulated: no model is called. The built-in runner counts in counter.txt, logs each step and journals it as a tool call and result. The agent names %s/%s as its model only so that B renders the journal for it while preparing.", demoModel.Provider, demoModel.Model)
	if res.StepsBefore, err = waitDemoSteps(ctx, a, st.ID, 20); err != nil {
		return res, err
	}
	say("It has taken %d steps on A. Moving it to B while it works...", res.StepsBefore)
	var phases phaseClock
	res.Move, err = a.Move(ctx, st.ID, api.MoveRequest{To: string(b.ID())}, phases.observe)
	if err != nil {
		return res, err
	}
	res.Phases = phases.end()
	m := res.Move
	say("Move %s: %s at epoch %d, %s sent in all (%d blobs, %d skipped as already there), %d pre-copy rounds.",
		m.MoveID, m.Outcome, m.Epoch, humanBytes(m.BytesSent), m.BlobsSent, m.BlobsSkipped, m.PrecopyRounds)
	printPhases(say, res.Phases)
	say("Frozen window: %d ms (freeze on A to running on B), %s sent inside it, %d round trips while frozen; the rest was pre-copied while the agent ran.",
		m.FrozenMS, humanBytes(m.WindowBytes), m.RoundTripsFrozen)
	if r := m.Render; r != nil && r.Note == "" {
		say("While preparing, B rendered the journal (%d events) into the body %s would be sent (%s wire format): %s, about %d tokens, in %.1f ms. It was measured to prove B can serve the next step, and not sent.",
			r.Events, modelName(r.Model), r.RenderAPI, humanBytes(int64(r.Bytes)), r.Tokens, float64(r.Micros)/1000)
	} else if r != nil {
		say("B rendered nothing while preparing: %s.", r.Note)
	}
	if m.Outcome != api.OutcomeCommitted {
		return res, fmt.Errorf("demo: the move did not commit: %s", m.Reason)
	}
	if res.StepsAfter, err = waitDemoSteps(ctx, b, st.ID, 10); err != nil {
		return res, err
	}
	sa, _ := a.Agent(ctx, st.ID)
	say("A now says the agent is %s (successor %s); B has run it for %d steps.", sa.State, short(sa.Successor), res.StepsAfter)
	if _, err := b.StopAgent(ctx, st.ID); err != nil {
		return res, err
	}
	if res.Report, err = b.Report(st.ID, 1<<20); err != nil {
		return res, err
	}
	res.Report.StepLogTail = handover(res.Report.StepLogTail)
	printReport(say, res.Report)
	return res, nil
}

// demoPhase is one phase of the move as the CLI saw it: how long it ran
// and what was sent during it (not the running totals the progress events
// carry).
type demoPhase struct {
	Phase        string `json:"phase"`
	MS           int64  `json:"ms"`
	Bytes        int64  `json:"bytes"`
	BlobsSent    int    `json:"blobs_sent"`
	BlobsSkipped int    `json:"blobs_skipped"`
}

// phaseClock turns the move's progress events into per-phase figures. An
// event names the phase the move is in and the totals sent so far, so a
// phase's figures are the totals when the next phase begins minus those
// when it began, and its time runs between the two events' arrivals.
type phaseClock struct {
	phases []demoPhase
	start  time.Time
	at     api.MoveProgress // the totals when the current phase began
	last   api.MoveProgress // the latest totals
}

func (c *phaseClock) observe(p api.MoveProgress) {
	now := time.Now()
	c.last = p
	if len(c.phases) == 0 || c.phases[len(c.phases)-1].Phase != p.Phase {
		c.close(now)
		c.phases = append(c.phases, demoPhase{Phase: p.Phase})
		c.start, c.at = now, p
	}
}

// close fills in the current phase's figures at time now.
func (c *phaseClock) close(now time.Time) {
	if len(c.phases) == 0 {
		return
	}
	ph := &c.phases[len(c.phases)-1]
	ph.MS = now.Sub(c.start).Milliseconds()
	ph.Bytes = c.last.BytesSent - c.at.BytesSent
	ph.BlobsSent = c.last.BlobsSent - c.at.BlobsSent
	ph.BlobsSkipped = c.last.BlobsSkipped - c.at.BlobsSkipped
}

// end closes the last phase and returns them all, without the final
// "done" marker.
func (c *phaseClock) end() []demoPhase {
	c.close(time.Now())
	out := c.phases
	if n := len(out); n > 0 && out[n-1].Phase == api.PhaseDone {
		out = out[:n-1]
	}
	if out == nil {
		out = []demoPhase{}
	}
	return out
}

func printPhases(say func(string, ...any), phases []demoPhase) {
	say("  %-9s %8s %10s %6s %8s", "phase", "time", "sent", "blobs", "skipped")
	for _, p := range phases {
		frozen := ""
		if p.Phase != api.PhasePrecopy {
			frozen = "  (agent frozen)"
		}
		say("  %-9s %5d ms %10s %6d %8d%s", p.Phase, p.MS, humanBytes(p.Bytes), p.BlobsSent, p.BlobsSkipped, frozen)
	}
	say("  (phase times run between the progress lines as this command received them, so the last phase includes the reply and the report; the frozen window below is what the nodes measured)")
}

func modelName(m *api.ModelRef) string {
	if m == nil {
		return "the agent's model"
	}
	return m.Provider + "/" + m.Model
}

func printReport(say func(string, ...any), r node.AgentReport) {
	verdict := "verifies"
	if !r.OK() {
		verdict = "DOES NOT verify"
	}
	say("On B, the capsule %s: %d problems; journal of %d events with intact chains, epochs %v, written by %d machines.",
		verdict, len(r.Problems), r.Events, r.Epochs, len(r.EventsByMachine))
	for _, p := range r.Problems {
		say("  problem: %s", p)
	}
	say("The counter file says %d and the journal holds %d counter results: no step lost, none run twice.", r.Counter, r.CounterResults)
	say("The workspace's steps.log around the handover (step, node, epoch):")
	for _, l := range r.StepLogTail {
		say("  %s", l)
	}
}

// handover keeps the steps.log lines around the change of epoch.
func handover(lines []string) []string {
	for i := 1; i < len(lines); i++ {
		if epochOf(lines[i]) != epochOf(lines[i-1]) {
			return lines[max(0, i-2):min(len(lines), i+2)]
		}
	}
	return lines[max(0, len(lines)-4):]
}

func epochOf(line string) string {
	_, e, _ := strings.Cut(line, "epoch=")
	return e
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// demoModel is the model the demo agent is created for: the target of a
// move renders the journal for it while preparing (nothing is sent to it).
var demoModel = api.ModelRef{Provider: "ollama", API: "chat", Model: "llama3.2"}

func startDemoNodes(dir string) ([]*node.Node, error) {
	var nodes []*node.Node
	for _, name := range []string{"a", "b"} {
		n, err := node.New(node.Config{Dir: filepath.Join(dir, name), Listen: "127.0.0.1:0", Socket: "-",
			StepInterval: 20 * time.Millisecond, RetryInterval: 50 * time.Millisecond, Commit: buildCommit(),
			Runner: node.CounterRunner{}}) // the demo agent names a model only for the prepare render
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

func writeDemoWorkspace(ws string) error {
	files := map[string]string{
		"README.md":      "# demo workspace\nThe built-in runner counts in counter.txt and logs each step in steps.log.\n",
		"notes/plan.md":  "1. count\n2. move\n3. keep counting\n",
		"data/table.csv": strings.Repeat("id,value\n1,42\n", 2000),
		"notes/.keep":    "",
	}
	for name, body := range files {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func waitDemoSteps(ctx context.Context, n *node.Node, id string, k uint64) (uint64, error) {
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		st, err := n.Agent(ctx, id)
		if err != nil {
			return 0, err
		}
		if st.Steps >= k {
			return st.Steps, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("demo: agent %s took no %d steps on %s in time", id, k, n.ID())
}
