package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/agentlog"
)

// makeEphemeral rewrites the stopped agent's environment spec so that it
// is ephemeral with discard bound maxTokens, then journals one usage event
// of tokens tokens (0: none).
func makeEphemeral(t *testing.T, n *Node, id string, maxTokens, tokens int64) {
	t.Helper()
	a, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	editSpecLocked(t, n, a, func(spec *envspec.Spec) {
		spec.Lifecycle.Ephemeral, spec.Lifecycle.DiscardMaxTokens = true, maxTokens
	})
	if tokens == 0 {
		return
	}
	u := journal.Usage{Producer: journal.Producer{Provider: "p", API: "a", Model: "m"}, InputTokens: tokens / 2, OutputTokens: tokens - tokens/2}
	if _, err := a.log.Append(journal.KindUsage, a.holder.Holder(), n.wallTime(), u); err != nil {
		t.Fatal(err)
	}
}

func discardSetup(t *testing.T) (*Node, string) {
	t.Helper()
	n := newCluster(t, nodeOpts{}).nodes[0]
	id := createAgent(t, n, "")
	if _, err := n.StopAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return n, id
}

// A discard is refused, saying why, when the spec does not declare the
// agent ephemeral, and when its usage went above the spec's bound, naming
// the usage event (FORMAT §11.9.4); a refused discard keeps the journal.
func TestDiscardRefused(t *testing.T) {
	t.Run("not ephemeral", func(t *testing.T) {
		n, id := discardSetup(t)
		_, err := n.DiscardAgent(context.Background(), id)
		if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "ephemeral") {
			t.Fatalf("discard: %v, want a conflict naming ephemeral", err)
		}
	})
	t.Run("usage above the bound", func(t *testing.T) {
		n, id := discardSetup(t)
		makeEphemeral(t, n, id, 1000, 1200)
		before := journalBytes(t, n, id)
		events, _, err := agentlog.Read(n.fsys, journalFile(n, id))
		if err != nil {
			t.Fatal(err)
		}
		usage := events[len(events)-1]
		_, err = n.DiscardAgent(context.Background(), id)
		if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "usage: ") || !strings.Contains(err.Error(), usage.ID) {
			t.Fatalf("discard: %v, want a conflict naming usage event %s", err, usage.ID)
		}
		if !bytes.Equal(journalBytes(t, n, id), before) {
			t.Error("a refused discard changed the journal")
		}
	})
}

// An ephemeral agent whose usage is within the bound is discarded: its old
// journal is kept byte for byte as discarded-<time>.jsonl, the new journal
// starts with the epoch and a resumed event saying it was discarded, and
// the agent runs again when it ran before.
func TestDiscardStartsOver(t *testing.T) {
	n := newCluster(t, nodeOpts{}).nodes[0]
	id := createAgent(t, n, "")
	ctx := context.Background()
	if _, err := n.StopAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	makeEphemeral(t, n, id, 1000, 800)
	if _, err := n.StartAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, err := n.DiscardAgent(ctx, id)
	if err != nil {
		t.Fatalf("discard: %v", err)
	}
	kept, err := os.ReadFile(filepath.Join(n.cfg.Dir, "agents", id, res.SetAside))
	if err != nil {
		t.Fatalf("the old journal was not set aside: %v", err)
	}
	old, err := journal.Decode(bytes.NewReader(kept))
	if err != nil || int64(len(old)) != res.Events {
		t.Fatalf("set-aside journal: %d events, %v; result says %d", len(old), err, res.Events)
	}
	if !hasKind(old, journal.KindUsage) || old[len(old)-1].Kind != journal.KindFrozen {
		t.Errorf("set-aside journal lacks the usage or ends without the stop: %v", kinds(old))
	}
	steps := res.Agent.Steps
	waitSteps(t, n, id, steps+2)
	if _, err := n.StopAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	events, _, err := agentlog.Read(n.fsys, journalFile(n, id))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) < 2 || events[0].Kind != journal.KindEpoch || events[1].Kind != journal.KindResumed ||
		!strings.Contains(string(events[1].Body), "discarded: ") || hasKind(events, journal.KindUsage) {
		t.Errorf("new journal: %v, want epoch, resumed (discarded), no usage", kinds(events))
	}
	if probs := verifyCapsule(n.fsys, filepath.Join(n.cfg.Dir, "agents", id, capsuleDir)); len(probs) > 0 {
		t.Errorf("capsule after discard: %v", probs)
	}
}

func journalFile(n *Node, id string) string {
	return filepath.Join(n.cfg.Dir, "agents", id, capsuleDir, journalInCap)
}

func journalBytes(t *testing.T, n *Node, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(journalFile(n, id))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hasKind(events []journal.Event, k journal.Kind) bool {
	for _, e := range events {
		if e.Kind == k {
			return true
		}
	}
	return false
}

func kinds(events []journal.Event) []journal.Kind {
	out := make([]journal.Kind, len(events))
	for i, e := range events {
		out[i] = e.Kind
	}
	return out
}

// A discarded agent moves to a node that kept a copy of its old journal
// (it held the agent before): the target takes the new journal, not the
// old one, and runs it; the agent's node restarts with the new journal.
func TestDiscardThenMoveToOldHolder(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	c := &cluster{t: t, nodes: []*Node{newNode(t, dirs[0], nodeOpts{}), newNode(t, dirs[1], nodeOpts{})}}
	c.link()
	a, b := c.nodes[0], c.nodes[1]
	ctx := context.Background()
	id := createAgent(t, a, "")
	for _, hop := range [][2]*Node{{a, b}, {b, a}} {
		if res := move(t, hop[0], hop[1], id); res.Outcome != api.OutcomeCommitted {
			t.Fatalf("move: %+v", res)
		}
	}
	waitSteps(t, a, id, 3)
	if _, err := a.StopAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	makeEphemeral(t, a, id, 0, 0)
	if _, err := a.DiscardAgent(ctx, id); err != nil {
		t.Fatalf("discard: %v", err)
	}
	restartNode(t, c, 0, dirs[0], nodeOpts{})
	a = c.nodes[0]
	if _, err := a.StartAgent(ctx, id); err != nil {
		t.Fatalf("start after restart: %v", err)
	}
	waitSteps(t, a, id, 2)
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move after discard: %+v", res)
	}
	waitSteps(t, b, id, 2)
	if _, err := b.StopAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	events, _, err := agentlog.Read(b.fsys, journalFile(b, id))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) < 2 || events[0].Kind != journal.KindEpoch || !strings.Contains(string(events[1].Body), "discarded: ") {
		t.Errorf("B's journal after the move: %v, want the new journal", kinds(events))
	}
}

// A discard keeps the model the agent last used, not its conversation: the
// new journal repeats the last model_change and holds no user message.
func TestDiscardKeepsModel(t *testing.T) {
	n := newCluster(t, nodeOpts{}).nodes[0]
	ctx := context.Background()
	st, err := n.CreateAgent(ctx, api.CreateAgentRequest{Name: "m", Stopped: true, Model: &api.ModelRef{Provider: "ollama", Model: "first"}, Task: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.SetModel(ctx, st.ID, api.ModelRequest{Provider: "ollama", Model: "second"}); err != nil {
		t.Fatal(err)
	}
	makeEphemeral(t, n, st.ID, 0, 0)
	if _, err := n.DiscardAgent(ctx, st.ID); err != nil {
		t.Fatalf("discard: %v", err)
	}
	events, _, err := agentlog.Read(n.fsys, journalFile(n, st.ID))
	if err != nil {
		t.Fatal(err)
	}
	want := []journal.Kind{journal.KindEpoch, journal.KindModelChange, journal.KindResumed}
	if got := kinds(events); !slices.Equal(got, want) || !strings.Contains(string(events[1].Body), `"second"`) {
		t.Errorf("new journal: %v %s, want %v with model second", got, events[1].Body, want)
	}
}
