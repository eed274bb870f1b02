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
run twice). It needs no network beyond loopback and no account.`,
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
	say("Created agent %s on A (epoch 1) from a 3-file workspace, for model %s/%s; it counts, logs and journals every step.", st.ID, demoModel.Provider, demoModel.Model)
	if res.StepsBefore, err = waitDemoSteps(ctx, a, st.ID, 20); err != nil {
		return res, err
	}
	say("It has taken %d steps on A. Moving it to B while it works...", res.StepsBefore)
	res.Move, err = a.Move(ctx, st.ID, api.MoveRequest{To: string(b.ID())}, func(p api.MoveProgress) {
		say("  %-9s %6d bytes sent, %d blobs sent, %d skipped", p.Phase, p.BytesSent, p.BlobsSent, p.BlobsSkipped)
	})
	if err != nil {
		return res, err
	}
	m := res.Move
	say("Move %s: %s at epoch %d. Frozen window %d ms (freeze on A to running on B), %d bytes sent, %d round trips while frozen, %d pre-copy rounds.",
		m.MoveID, m.Outcome, m.Epoch, m.FrozenMS, m.BytesSent, m.RoundTripsFrozen, m.PrecopyRounds)
	if r := m.Render; r != nil && r.Note == "" {
		say("B prepared it by rendering the journal (%d events) for %s: a %d-byte %s request, about %d tokens, in %.1f ms.",
			r.Events, r.Model.Model, r.Bytes, r.RenderAPI, r.Tokens, float64(r.Micros)/1000)
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
			StepInterval: 20 * time.Millisecond, RetryInterval: 50 * time.Millisecond, Commit: buildCommit()})
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
