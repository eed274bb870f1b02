package node

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/vfs"
)

// journalOf reads agent id's journal on n.
func journalOf(t *testing.T, n *Node, id string) []journal.Event {
	t.Helper()
	a, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	events, _, err := agentlog.Read(n.fsys, filepath.Join(a.capsule(), journalInCap))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// eventByID returns the event of events with id.
func eventByID(t *testing.T, events []journal.Event, id string) journal.Event {
	t.Helper()
	for _, e := range events {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("event %s is not in the journal (%d events)", id, len(events))
	return journal.Event{}
}

// Say journals the text, exactly, as a user message under the holder
// epoch and wakes the runner; hostile text that is still valid UTF-8
// goes through unchanged, and text that is not is refused before
// anything is written.
func TestSayJournalsAndWakes(t *testing.T) {
	n := newNode(t, t.TempDir(), nodeOpts{})
	id := createAgent(t, n, "")
	var woken []string
	n.hooks.woken = func(agent string) { woken = append(woken, agent) }
	ctx := context.Background()
	texts := []string{"hello", "a\x00b\u2028</script>\"\\\n{\"kind\":\"epoch\"}", strings.Repeat("é", api.MaxSayText/2)}
	for _, text := range texts {
		ref, err := n.Say(ctx, id, api.SayRequest{Text: text})
		if err != nil {
			t.Fatalf("Say(%.20q): %v", text, err)
		}
		e := eventByID(t, journalOf(t, n, id), ref.ID)
		var body journal.UserMessage
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
		if e.Kind != journal.KindUser || body.Text != text || e.Epoch != 1 || ref.Seq != e.Seq || ref.Machine != e.Machine {
			t.Errorf("journaled %s %q epoch %d (ref %+v), want user %.20q epoch 1", e.Kind, body.Text, e.Epoch, ref, text)
		}
	}
	if len(woken) != len(texts) {
		t.Errorf("woken %d times, want %d", len(woken), len(texts))
	}
	before := len(journalOf(t, n, id))
	for _, bad := range []string{"", " \n\t", strings.Repeat("x", api.MaxSayText+1), "ok\xff\xfe"} {
		_, err := n.Say(ctx, id, api.SayRequest{Text: bad})
		if !errors.Is(err, api.ErrInvalid) {
			t.Errorf("Say(%.20q) = %v, want ErrInvalid", bad, err)
		}
	}
	if len(woken) != len(texts) {
		t.Errorf("a refused say woke the runner")
	}
	for _, e := range journalOf(t, n, id)[before:] {
		if e.Kind == journal.KindUser {
			t.Errorf("a refused say journaled %s", e.ID)
		}
	}
}

// A stopped agent this node holds takes messages (they wait for it); an
// agent that moved away is refused with ErrConflict naming its holder,
// and an unknown one is not found.
func TestSayRefusedWhenNotHeld(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	ctx := context.Background()
	id := createAgent(t, a, "")
	if _, err := a.StopAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Say(ctx, id, api.SayRequest{Text: "while stopped"}); err != nil {
		t.Fatalf("Say to a stopped agent: %v", err)
	}
	if _, err := a.StartAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	_, err := a.Say(ctx, id, api.SayRequest{Text: "hello"})
	if !errors.Is(err, api.ErrConflict) || !errors.Is(err, ErrNotHeld) || !strings.Contains(err.Error(), string(b.ID())) {
		t.Errorf("Say on the old holder = %v, want ErrConflict naming %s", err, b.ID())
	}
	_, err = a.SetModel(ctx, id, api.ModelRequest{Provider: "ollama", Model: "llama3"})
	if !errors.Is(err, api.ErrConflict) {
		t.Errorf("SetModel on the old holder = %v, want ErrConflict", err)
	}
	if _, err := b.Say(ctx, id, api.SayRequest{Text: "hello"}); err != nil {
		t.Errorf("Say on the new holder: %v", err)
	}
	if _, err := a.Say(ctx, "01N0SXCHAGENT0000000000000", api.SayRequest{Text: "x"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Say to an unknown agent = %v, want ErrNotFound", err)
	}
}

// SetModel journals the model_change (the provider's default API when
// none is named) and keeps the base URL in agent.json only; requests the
// renderer cannot serve are refused.
func TestSetModel(t *testing.T) {
	n := newNode(t, t.TempDir(), nodeOpts{})
	id := createAgent(t, n, "")
	woke := 0
	n.hooks.woken = func(string) { woke++ }
	ctx := context.Background()
	cases := []struct {
		req  api.ModelRequest
		want journal.ModelChange
	}{
		{api.ModelRequest{Provider: "anthropic", Model: "claude-x"}, journal.ModelChange{Provider: "anthropic", API: "messages", Model: "claude-x"}},
		{api.ModelRequest{Provider: "deepseek", API: "chat", Model: "ds", BaseURL: "http://127.0.0.1:8080/v1"}, journal.ModelChange{Provider: "deepseek", API: "chat", Model: "ds"}},
		{api.ModelRequest{Provider: "openai", Model: "gpt-x"}, journal.ModelChange{Provider: "openai", API: "responses", Model: "gpt-x"}},
	}
	for _, tc := range cases {
		ref, err := n.SetModel(ctx, id, tc.req)
		if err != nil {
			t.Fatalf("SetModel(%+v): %v", tc.req, err)
		}
		e := eventByID(t, journalOf(t, n, id), ref.ID)
		var got journal.ModelChange
		if err := json.Unmarshal(e.Body, &got); err != nil {
			t.Fatal(err)
		}
		if e.Kind != journal.KindModelChange || got != tc.want {
			t.Errorf("SetModel(%+v) journaled %s %+v, want %+v", tc.req, e.Kind, got, tc.want)
		}
		if strings.Contains(string(e.Body), "base_url") || strings.Contains(string(e.Body), "127.0.0.1") {
			t.Errorf("the base URL reached the journal: %s", e.Body)
		}
		if got := metaOf(t, n, id).BaseURL; got != tc.req.BaseURL {
			t.Errorf("agent.json base_url = %q, want %q", got, tc.req.BaseURL)
		}
	}
	if woke != len(cases) {
		t.Errorf("woken %d times, want %d", woke, len(cases))
	}
	for _, bad := range []api.ModelRequest{
		{Provider: "", Model: "m"},
		{Provider: "openai", Model: ""},
		{Provider: "openai", API: "completions", Model: "m"},
		{Provider: "deepseek", Model: "m"}, // no default API
		{Provider: "ollama", Model: "m", BaseURL: "file:///etc/passwd"},
		{Provider: "ollama", Model: "m", BaseURL: "127.0.0.1:11434"},
	} {
		if _, err := n.SetModel(ctx, id, bad); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("SetModel(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}

func metaOf(t *testing.T, n *Node, id string) record.Meta {
	t.Helper()
	a, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := vfs.ReadFile(n.fsys, a.path(record.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := record.DecodeMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// While a move keeps the agent frozen (here: while the target renders the
// journal that ends with the freeze, inside the source's frozen window) the source refuses to
// take a message, saying the move keeps it frozen; once the move rolled
// back it takes messages again.
func TestSayRefusedWhileFrozen(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Model: &api.ModelRef{Provider: "ollama", API: "chat", Model: "llama3.2"}})
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, a, st.ID, 2)
	saidErr := make(chan error, 1)
	b.hooks.render = func(events []journal.Event, _ render.Target) ([]byte, *render.Report, error) {
		if events[len(events)-1].Kind != journal.KindFrozen {
			return nil, &render.Report{}, nil // rendered ahead, during pre-copy: the agent still runs
		}
		done := make(chan error, 1)
		go func() {
			_, err := a.Say(context.Background(), st.ID, api.SayRequest{Text: "are you there?"})
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			err = errors.New("Say blocked during the frozen window")
		}
		select {
		case saidErr <- err: // the first frozen render's
		default:
		}
		return nil, nil, errors.New("refuse the move")
	}
	if res := move(t, a, b, st.ID); res.Outcome != api.OutcomeRolledBack {
		t.Fatalf("move = %+v, want rolled back", res)
	}
	err = <-saidErr
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("Say while frozen = %v, want ErrConflict saying the move keeps it frozen", err)
	}
	if _, err := a.Say(context.Background(), st.ID, api.SayRequest{Text: "back?"}); err != nil {
		t.Errorf("Say after the rollback: %v", err)
	}
}
