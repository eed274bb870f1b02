package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// cluster is a set of in-process nodes on loopback with real mutual TLS,
// each trusting all the others.
type cluster struct {
	t     testing.TB
	nodes []*Node
}

type nodeOpts struct {
	fsys   vfs.FS
	step   time.Duration // runner step interval (default 5ms)
	runner Runner        // default CounterRunner, unless agentLoop
	// agentLoop leaves Config.Runner unset: agents that name a language
	// model run the agent loop (package agent).
	agentLoop bool
	// providers, endpoint and tools are Config.Providers, ModelEndpoint
	// and Tools.
	providers func(render.API) (provider.Client, error)
	endpoint  string
	tools     func(workdir string) (agent.Toolbox, io.Closer, error)
	toolWait  time.Duration
	policy    transfer.Policy
	wrap      func(peer ID, rt http.RoundTripper) http.RoundTripper
	env       map[string]string
	// abortRetries is Config.AbortRetries (0: the default).
	abortRetries int
	// logger is Config.Logger (nil: testLogger).
	logger *slog.Logger
	// journalUpTo is Config.ReadJournalUpTo (0: this release's).
	journalUpTo int
	// allowUnsandboxed is Config.AllowUnsandboxed.
	allowUnsandboxed bool
	// discardRefused is Config.DiscardRefused.
	discardRefused bool
	// authority is Config.Authority (nil: LocalAuthority).
	authority Authority
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("NODE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

func newNode(t testing.TB, dir string, o nodeOpts) *Node {
	t.Helper()
	return newNodeAt(t, dir, "127.0.0.1:0", o)
}

// newNodeAt starts a node listening on addr ("127.0.0.1:0" for any port).
func newNodeAt(t testing.TB, dir, addr string, o nodeOpts) *Node {
	t.Helper()
	env := o.env
	step := o.step
	if step == 0 {
		step = 5 * time.Millisecond
	}
	logger := o.logger
	if logger == nil {
		logger = testLogger(t)
	}
	runner := o.runner
	if runner == nil && !o.agentLoop {
		runner = CounterRunner{}
	}
	n, err := New(Config{Dir: dir, FS: o.fsys, Listen: addr, Socket: "-", Logger: logger,
		StepInterval: step, RetryInterval: 20 * time.Millisecond, RequestTimeout: 5 * time.Second,
		WrapTransport: o.wrap, Getenv: func(k string) string { return env[k] }, Runner: runner, Policy: o.policy, AbortRetries: o.abortRetries,
		Providers: o.providers, ModelEndpoint: o.endpoint, Tools: o.tools, ToolWait: o.toolWait, ReadJournalUpTo: o.journalUpTo,
		AllowUnsandboxed: o.allowUnsandboxed, DiscardRefused: o.discardRefused, Authority: o.authority})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	return n
}

func newCluster(t testing.TB, opts ...nodeOpts) *cluster {
	t.Helper()
	c := &cluster{t: t}
	for i, o := range opts {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i))
		c.nodes = append(c.nodes, newNode(t, dir, o))
	}
	c.link()
	return c
}

func (c *cluster) link() {
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				if err := a.AddPeer(context.Background(), api.Peer{ID: string(b.ID()), Addr: b.Addr()}); err != nil {
					c.t.Fatal(err)
				}
			}
		}
	}
}

// createAgent creates a running agent on n and waits for it to take steps.
func createAgent(t testing.TB, n *Node, from string) string {
	t.Helper()
	st, err := n.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "test", From: from})
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, n, st.ID, 3)
	return st.ID
}

func waitSteps(t testing.TB, n *Node, id string, k uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, err := n.Agent(context.Background(), id)
		if err == nil && st.State == api.StateRunning && st.Steps >= k {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, _ := n.Agent(context.Background(), id)
	t.Fatalf("agent %s on %s did not take %d steps: %+v", id, n.ID().Short(), k, st)
}

func move(t testing.TB, from, to *Node, id string) api.MoveResult {
	t.Helper()
	return moveWithin(t, from, to, id, 20*time.Second)
}

// moveThereAndBack moves agent id from a to b and back, each move committed and
// followed by a few steps on its new holder.
func moveThereAndBack(t testing.TB, a, b *Node, id string) {
	t.Helper()
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move A -> B: %+v", res)
	}
	waitSteps(t, b, id, 3)
	if res := move(t, b, a, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move B -> A: %+v", res)
	}
	waitSteps(t, a, id, 3)
}

func moveWithin(t testing.TB, from, to *Node, id string, d time.Duration) api.MoveResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := from.Move(ctx, id, api.MoveRequest{To: string(to.ID())}, nil)
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	return res
}

// running returns the nodes whose runner runs agent id.
func (c *cluster) running(id string) []ID {
	var out []ID
	for _, n := range c.nodes {
		n.mu.Lock()
		a := n.tenants[id]
		n.mu.Unlock()
		if a == nil {
			continue
		}
		a.mu.Lock()
		if a.run != nil {
			out = append(out, n.ID())
		}
		a.mu.Unlock()
	}
	return out
}

// checkHolder checks the invariants on the node that should hold agent id:
// exactly one runner in the cluster, on holder; its capsule verifies after
// a commit; the journal verifies; the counter equals the number of counter
// results in the journal (no step lost or run twice); every staging folder
// of other nodes is empty.
func (c *cluster) checkHolder(holder *Node, id string) {
	t := c.t
	t.Helper()
	if got := c.running(id); len(got) != 1 || got[0] != holder.ID() {
		t.Fatalf("runners of %s = %v, want exactly [%s]", id, got, holder.ID())
	}
	a, _ := holder.getTenant(id)
	a.mu.Lock()
	if err := a.stopLocked("check"); err != nil {
		a.mu.Unlock()
		t.Fatal(err)
	}
	probs := verifyCapsule(holder.fsys, a.capsule())
	counter, cerr := readCounter(holder.fsys, filepath.Join(a.work(), CounterFile))
	events, _, jerr := agentlog.Read(holder.fsys, filepath.Join(a.capsule(), journalInCap))
	if err := a.startLocked(journal.KindResumed, journal.Resumed{Reason: "check done"}); err != nil {
		t.Error(err)
	}
	a.mu.Unlock()
	if len(probs) > 0 {
		t.Errorf("holder's capsule does not verify:\n%s", strings.Join(probs, "\n"))
	}
	if cerr != nil || jerr != nil {
		t.Fatalf("counter: %v, journal: %v", cerr, jerr)
	}
	if vp := journal.Verify(events); len(vp) > 0 {
		t.Errorf("journal problems: %v", vp)
	}
	results := counterResults(t, events)
	if counter != uint64(len(results)) {
		t.Errorf("counter = %d, journal holds %d counter results: a step was lost or run twice", counter, len(results))
	}
	for i, n := range results {
		if n != uint64(i+1) {
			t.Fatalf("counter results out of sequence at %d: %d", i, n)
		}
	}
	for _, n := range c.nodes {
		if n != holder {
			c.checkNoStaging(n, id)
		}
	}
}

func counterResults(t testing.TB, events []journal.Event) []uint64 {
	var out []uint64
	for _, e := range events {
		if e.Kind != journal.KindToolResult {
			continue
		}
		var r journal.ToolResult
		if err := jsonUnmarshal(e.Body, &r); err != nil {
			t.Fatal(err)
		}
		if r.Name == CounterTool {
			n, _ := strconv.ParseUint(r.Content, 10, 64)
			out = append(out, n)
		}
	}
	return out
}

func (c *cluster) checkNoStaging(n *Node, id string) {
	c.t.Helper()
	ents, err := n.fsys.ReadDir(filepath.Join(n.cfg.Dir, "agents", id, stagingDir))
	if err == nil && len(ents) > 0 {
		c.t.Errorf("node %s keeps staging for %s: %v", n.ID().Short(), id, ents[0].Name())
	}
}

// editSpecLocked commits edit's change to the environment spec of agent a
// of n; the caller holds a.mu.
func editSpecLocked(t *testing.T, n *Node, a *tenant, edit func(*envspec.Spec)) {
	t.Helper()
	c, err := capsule.Open(n.fsys, a.capsule(), capsule.Config{Writer: n.writer()})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := c.Environment()
	if err != nil {
		t.Fatal(err)
	}
	edit(spec)
	if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetEnvironment(spec) }); err != nil {
		t.Fatal(err)
	}
}
