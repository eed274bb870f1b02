package node

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/store/storetest"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

// quietRunner journals each step and never touches the workspace, so a
// test can compare the workspace across a move.
type quietRunner struct{}

func (quietRunner) Step(ctx context.Context, env *StepEnv) error {
	_, err := env.Append(journal.KindUser, journal.UserMessage{Text: "tick"})
	return err
}

// onCall runs before each request of one call, then forwards it.
type onCall struct {
	next   http.RoundTripper
	call   string
	before func()
}

func (o onCall) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get(api.CallHeader) == o.call {
		o.before()
	}
	return o.next.RoundTrip(r)
}

func writeTestWorkspace(t *testing.T, links bool) string {
	ws := t.TempDir()
	for name, body := range map[string]string{"README.md": "hello\n", "src/main.go": "package main\n", "data/big.bin": strings.Repeat("0123456789abcdef", 4096), "keep/x": "x"} {
		if err := writeHostFile(filepath.Join(ws, filepath.FromSlash(name)), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Chmod(filepath.Join(ws, "src", "main.go"), 0o755)
	_ = os.MkdirAll(filepath.Join(ws, "empty"), 0o755)
	if links {
		_ = os.Symlink("README.md", filepath.Join(ws, "link"))
	}
	return ws
}

// changeTestWorkspace changes the workspace the way an agent's last steps
// before a freeze would: rewrites, a new file in a new folder, a removal,
// an exec bit, an empty folder filled and another emptied.
func changeTestWorkspace(t *testing.T, n *Node, id string) {
	w := filepath.Join(n.cfg.Dir, "agents", id, workDir)
	fsys := n.fsys
	steps := []func() error{
		func() error {
			return vfs.WriteFile(fsys, filepath.Join(w, "README.md"), []byte("hello, moved\n"), 0o644)
		},
		func() error { return fsys.MkdirAll(filepath.Join(w, "new", "deep"), 0o755) },
		func() error {
			return vfs.WriteFile(fsys, filepath.Join(w, "new", "deep", "f.txt"), []byte("new"), 0o644)
		},
		func() error { return fsys.Remove(filepath.Join(w, "data", "big.bin")) },
		func() error { return fsys.Chmod(filepath.Join(w, "README.md"), 0o755) },
		func() error { return vfs.WriteFile(fsys, filepath.Join(w, "empty", "now"), nil, 0o644) },
		func() error { return fsys.Remove(filepath.Join(w, "keep", "x")) },
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Errorf("change %d: %v", i, err)
		}
	}
}

// TestMoveWorkspaceIsACheckout moves an agent whose workspace changes
// between the last pre-copy round and the freeze. The target's workspace,
// built from the shadow of the last round plus the delta (or, without
// pre-copy, from nothing), must equal the source's frozen workspace and a
// full checkout of the capsule the target holds, byte for byte, mode for
// mode. Symbolic links send the source down the full snapshot walk.
func TestMoveWorkspaceIsACheckout(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy transfer.Policy
		links  bool
	}{
		{"pre-copy", transfer.DefaultPolicy, false},
		{"pre-copy with links", transfer.DefaultPolicy, true},
		{"no pre-copy", transfer.Policy{MaxRounds: 0, SmallBytes: 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := nodeOpts{runner: quietRunner{}, policy: c.policy}
			cl := newCluster(t, opts, opts)
			a, b := cl.nodes[0], cl.nodes[1]
			id := createAgent(t, a, writeTestWorkspace(t, c.links))
			var want []string
			a.hooks.beforeFreeze = func(agent string) {
				changeTestWorkspace(t, a, agent)
				want = storetest.ListTree(t, a.fsys, filepath.Join(a.cfg.Dir, "agents", agent, workDir))
			}
			if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
				t.Fatalf("move: %+v", res)
			}
			if _, err := b.StopAgent(t.Context(), id); err != nil {
				t.Fatal(err)
			}
			ag, _ := b.getTenant(id)
			if diff := cmp.Diff(want, storetest.ListTree(t, b.fsys, ag.work())); diff != "" {
				t.Errorf("target workspace differs from the frozen source's (-source +target):\n%s", diff)
			}
			fresh := filepath.Join(t.TempDir(), "fresh")
			if err := checkoutCapsule(b.fsys, ag.capsule(), fresh); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(storetest.ListTree(t, b.fsys, fresh), storetest.ListTree(t, b.fsys, ag.work())); diff != "" {
				t.Errorf("target workspace differs from a checkout of its capsule (-checkout +target):\n%s", diff)
			}
			if probs := verifyCapsule(b.fsys, ag.capsule()); len(probs) > 0 {
				t.Errorf("target capsule: %v", probs)
			}
			if got, want := b.shadowsTaken.Load(), int64(min(c.policy.MaxRounds, 1)); got != want {
				t.Errorf("moves staged from a shadow = %d, want %d", got, want)
			}
		})
	}
}

// TestStagingDurableBeforePrepared takes the target's durable disk at the
// moment the source sends activate (the target answered prepared, so
// PREPARED is durable) and restarts the target from it: the staging must
// be complete there — the capsule verifies, the workspace is a checkout
// of it — and activate must then start the agent (docs/PROTOCOL.md §5:
// staging durable before PREPARED; a staging written without its syncs
// would be lost here).
func TestStagingDurableBeforePrepared(t *testing.T) {
	mem := vfs.NewMem()
	var durable *vfs.Mem
	var once sync.Once
	wrap := func(_ ID, rt http.RoundTripper) http.RoundTripper {
		return onCall{next: rt, call: "activate", before: func() { once.Do(func() { durable = mem.Durable() }) }}
	}
	cl := newCluster(t, nodeOpts{wrap: wrap}, nodeOpts{fsys: mem})
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, writeTestWorkspace(t, false))
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	b.Close(context.Background())
	b2 := newNode(t, b.cfg.Dir, nodeOpts{fsys: durable})
	ag, err := b2.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	ag.mu.Lock()
	p := ag.holder.Pending()
	ag.mu.Unlock()
	if p == nil || p.Phase != transfer.PhasePrepared {
		t.Fatalf("restarted target's pending move = %+v, want prepared", p)
	}
	staged := ag.staging(p.Move, capsuleDir)
	if probs := verifyCapsule(durable, staged); len(probs) > 0 {
		t.Fatalf("durable staging does not verify: %v", probs)
	}
	fresh := "/fresh"
	if err := checkoutCapsule(durable, staged, fresh); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(storetest.ListTree(t, durable, fresh), storetest.ListTree(t, durable, ag.staging(p.Move, workDir))); diff != "" {
		t.Fatalf("durable staged workspace is not a checkout (-checkout +staged):\n%s", diff)
	}
	reply, err := ag.handle(transfer.Message{Type: transfer.MsgActivate, Agent: id, Move: p.Move, Epoch: p.Epoch, From: string(a.ID()), To: string(b2.ID())})
	if err != nil || reply == nil || reply.Type != transfer.MsgActivated {
		t.Fatalf("activate after restart: %+v, %v", reply, err)
	}
	waitSteps(t, b2, id, 2)
}

// TestPrepareRendersForTheCurrentModel checks the target renders the
// journal for the agent's newest model_change while preparing, and says so
// in the move result; without a model_change there is nothing to render.
func TestPrepareRendersForTheCurrentModel(t *testing.T) {
	cl := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := cl.nodes[0], cl.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: &api.ModelRef{Provider: "ollama", API: "chat", Model: "llama3.2"}})
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, a, st.ID, 3)
	res := move(t, a, b, st.ID)
	if res.Outcome != api.OutcomeCommitted || res.Render == nil {
		t.Fatalf("move: %+v", res)
	}
	r := res.Render
	if r.Model == nil || r.Model.Model != "llama3.2" || r.RenderAPI != string(render.Ollama) || r.Bytes == 0 || r.Note != "" {
		t.Errorf("render report = %+v (model %+v), want an Ollama request for llama3.2", r, r.Model)
	}

	id := createAgent(t, a, "")
	res = move(t, a, b, id)
	if res.Outcome != api.OutcomeCommitted || res.Render == nil || res.Render.Note != noteNoModel || res.Render.Bytes != 0 {
		t.Errorf("move of an agent without a model: %+v, render %+v", res, res.Render)
	}
}

// TestPrepareFailsWhenRenderFails makes the target's render fail: the
// prepare fails, the move rolls back, the agent runs on the source again
// and the target keeps no staging.
func TestPrepareFailsWhenRenderFails(t *testing.T) {
	cl := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := cl.nodes[0], cl.nodes[1]
	b.hooks.render = func([]journal.Event, render.Target) ([]byte, *render.Report, error) {
		return nil, nil, errors.New("no such model here")
	}
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: &api.ModelRef{Provider: "ollama", API: "chat", Model: "llama3.2"}})
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, a, st.ID, 3)
	res := move(t, a, b, st.ID)
	if res.Outcome != api.OutcomeRolledBack || !strings.Contains(res.Reason, "no such model here") {
		t.Fatalf("move = %+v, want rolled back for the render", res)
	}
	waitSteps(t, a, st.ID, 3)
	waitNoStaging(t, cl, a, st.ID)
	cl.checkHolder(a, st.ID)
}

func TestRenderTarget(t *testing.T) {
	cases := []struct {
		mc   journal.ModelChange
		want render.API
	}{
		{journal.ModelChange{Provider: "ollama", API: "chat", Model: "llama3.2"}, render.Ollama},
		{journal.ModelChange{Provider: "openai", API: "chat", Model: "gpt-4.1"}, render.OpenAIChat},
		{journal.ModelChange{Provider: "openai", API: "responses", Model: "gpt-5"}, render.OpenAIResponses},
		{journal.ModelChange{Provider: "anthropic", API: "messages", Model: "claude-sonnet-4"}, render.Anthropic},
		{journal.ModelChange{Provider: "google", API: "generateContent", Model: "gemini-2.5-pro"}, render.Gemini},
		{journal.ModelChange{Provider: "deepseek", API: "chat", Model: "deepseek-chat"}, render.OpenAIChat},
		{journal.ModelChange{Provider: "vllm", API: "openai-chat", Model: "qwen"}, render.OpenAIChat},
	}
	for _, c := range cases {
		if got := agent.TargetOf(c.mc); got.API != c.want || got.Model != c.mc.Model || got.Provider != c.mc.Provider {
			t.Errorf("agent.TargetOf(%+v) = %+v, want API %s", c.mc, got, c.want)
		}
	}
}

// checkoutCapsule materializes the capsule's snapshot into workDir, which
// must not exist yet; every blob is verified as it is read.
func checkoutCapsule(fsys vfs.FS, capDir, workDir string) error {
	c, err := capsule.Open(fsys, capDir, capsule.Config{})
	if err != nil {
		return err
	}
	_, err = c.Checkout(workDir, capsule.CheckoutConfig{FS: fsys, Durable: true})
	return err
}

// TestShadowBlobLostFromStore removes from the target's CAS store, after
// pre-copy, a blob its shadow references. The offer's want list trusts the
// shadow and may leave it out: then the move's verify must refuse the
// staging (rolled back naming the blob, the agent runs on the source), and
// the next attempt, with no shadow left to trust, must commit. Either way
// the holder's capsule verifies.
func TestShadowBlobLostFromStore(t *testing.T) {
	opts := nodeOpts{runner: quietRunner{}}
	cl := newCluster(t, opts, opts)
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, writeTestWorkspace(t, false))
	removed := ""
	a.hooks.beforeFreeze = func(agent string) {
		if removed != "" {
			return
		}
		bag, err := b.getTenant(agent)
		if err != nil {
			t.Error(err)
			return
		}
		bag.mu.Lock()
		defer bag.mu.Unlock()
		if bag.tgt.shadow == nil {
			t.Error("no shadow on the target after pre-copy")
			return
		}
		for _, e := range bag.tgt.shadow.snap.Entries {
			if e.Type == capsule.TypeFile {
				removed = e.Blob.Short()
				if err := b.fsys.Remove(bag.cas().Path(e.Blob)); err != nil {
					t.Error(err)
				}
				return
			}
		}
	}
	res := move(t, a, b, id)
	if removed == "" {
		t.Fatal("no blob was removed")
	}
	switch {
	case res.Outcome == api.OutcomeRolledBack && strings.Contains(res.Reason, removed):
		// The rollback returns while the source still waits for the
		// target's answer to its abort (phase aborting), and until then
		// it refuses a new move: wait for it, not only for the target.
		waitSteps(t, a, id, 2)
		waitSourceDone(t, a, id)
		waitNoStaging(t, cl, a, id)
		if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
			t.Fatalf("second move: %+v", res)
		}
	case res.Outcome != api.OutcomeCommitted:
		t.Fatalf("move with %s lost from the target's store: %+v", removed, res)
	}
	ag, _ := b.getTenant(id)
	if r := verifySettled(t, b.fsys, ag.capsule()); len(r.Problems) > 0 || len(unreferenced(r)) > 0 {
		t.Errorf("target capsule: problems %v, unreferenced blobs %v", r.Problems, unreferenced(r))
	}
}

// waitSourceDone waits until node n's latest move of agent id has nothing
// left to send (an aborting source still resends its abort), and fails the
// test if it does not within 10s.
func waitSourceDone(t *testing.T, n *Node, id string) {
	t.Helper()
	ag, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	phase := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ag.mu.Lock()
		done := ag.src.machine == nil || ag.src.machine.Done()
		if ag.src.machine != nil {
			phase = ag.src.machine.Phase()
		}
		ag.mu.Unlock()
		if done {
			return
		}
	}
	t.Fatalf("the move of %s on %s is still %s after 10s", id, n.ID().Short(), phase)
}

// verifySettled verifies the capsule of an agent that just moved in. The
// new holder prunes the blobs the staging brought but nothing references
// (afterMove), in the background: a verify running meanwhile lists such a
// blob and then finds it gone. So it verifies again until no unreferenced
// blob is left (the prune ran) and returns that report, or the last one
// after 10s.
func verifySettled(t *testing.T, fsys vfs.FS, dir string) *capsule.Report {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := capsule.Verify(fsys, dir, capsule.VerifyOptions{JournalTail: journalTail, Workers: 2}) // as verifyCapsule
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Problems) == 0 && len(unreferenced(r)) == 0 || time.Now().After(deadline) {
			return r
		}
	}
}
