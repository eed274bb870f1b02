package render_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
)

// fuzzEvents reads fuzz input as one event per line, {"kind":K,"body":B};
// a line that is not such an object becomes a user event with the line
// as its (likely malformed) body, so any bytes make a journal.
func fuzzEvents(data []byte) []journal.Event {
	j := &rendertest.Journal{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e struct {
			Kind journal.Kind    `json:"kind"`
			Body json.RawMessage `json:"body"`
		}
		if json.Unmarshal(line, &e) != nil || e.Kind == "" {
			j.AddRaw(journal.KindUser, line)
			continue
		}
		j.AddRaw(e.Kind, e.Body)
	}
	return j.Events()
}

// FuzzRender renders arbitrary journals, including events the renderer
// cannot place (unknown kinds, malformed bodies and arguments, results
// before their calls), for every target and any window. It must never
// panic, must be deterministic, and every request it returns must pass
// the provider's validator and fit the window unless it says it cannot.
func FuzzRender(f *testing.F) {
	f.Add([]byte(`{"kind":"user","body":{"text":"hi"}}`), uint8(0), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, target uint8, window uint16) {
		events := fuzzEvents(data)
		tg := rendertest.Targets[int(target)%len(rendertest.Targets)]
		tg.Tools = rendertest.ToolSet("read_file", "search")
		tg.Window = int(window)
		body, rep, err := wire.Render(events, tg)
		if err == render.ErrEmpty {
			return
		}
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		if verr := rendertest.Validate(tg, body); verr != nil {
			t.Fatalf("%s %s: %v\nbody: %s", tg.API, tg.Model, verr, body)
		}
		if e := rep.Tokens; !e.OverBudget && e.Estimated > e.Budget {
			t.Fatalf("estimate %d over budget %d", e.Estimated, e.Budget)
		}
		again, _, _ := wire.Render(events, tg)
		if !bytes.Equal(body, again) {
			t.Fatal("not deterministic")
		}
	})
}
