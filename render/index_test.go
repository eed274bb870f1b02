package render_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
)

// indexOf streams events into an Index over a file holding only their
// bodies, back to back, handing Add a scratch copy of each body that is
// overwritten afterwards, as journal.Each reuses its buffers.
// fataler is what the helpers need of *testing.T and *rapid.T.
type fataler interface {
	Fatal(...any)
	Fatalf(string, ...any)
}

func indexOf(t fataler, events []journal.Event) *render.Index {
	var file bytes.Buffer
	at := make([]int64, len(events))
	for i := range events {
		at[i] = int64(file.Len())
		file.Write(events[i].Body)
	}
	x := render.NewIndex(bytes.NewReader(file.Bytes()))
	for i := range events {
		e := events[i]
		e.Body = bytes.Clone(e.Body)
		if err := x.Add(&e, at[i]); err != nil {
			t.Fatal(err)
		}
		for k := range e.Body {
			e.Body[k] = '#'
		}
	}
	return x
}

// sameRender checks that rendering from an Index gives Render's body,
// report and error.
func sameRender(t fataler, events []journal.Event, x *render.Index, tg render.Target) {
	wantBody, wantRep, wantErr := wire.Render(events, tg)
	body, rep, err := wire.RenderIndex(x, tg)
	if !errors.Is(err, wantErr) && (err == nil || wantErr == nil || err.Error() != wantErr.Error()) {
		t.Fatalf("%s %s: RenderIndex error %v, Render %v", tg.API, tg.Model, err, wantErr)
	}
	if !bytes.Equal(body, wantBody) {
		t.Fatalf("%s %s: RenderIndex body differs from Render:\n%s\nwant\n%s", tg.API, tg.Model, body, wantBody)
	}
	if d := cmp.Diff(wantRep, rep); d != "" {
		t.Fatalf("%s %s: RenderIndex report differs (-Render +RenderIndex):\n%s", tg.API, tg.Model, d)
	}
}

// TestIndexRendersLikeEvents renders the golden journal and a long one
// through an Index for every golden target and API: bytes and reports are
// Render's, so the golden files pin the streamed path too.
func TestIndexRendersLikeEvents(t *testing.T) {
	golden := goldenJournal()
	long := rt.Long(5_000, rt.Claude)
	gx, lx := indexOf(t, golden), indexOf(t, long)
	targets := []render.Target{chatGPT41, respGPT5, claude, claudeOpus, gemini3, ollamaQwen,
		{API: render.Anthropic, Model: "claude-sonnet-4-6", Window: 240},
		{API: render.OpenAIResponses, Model: "gpt-5", Window: 190}}
	for _, tg := range targets {
		tg.Tools = []render.Tool{weatherTool}
		sameRender(t, golden, gx, tg)
		tg.Window, tg.Tools = 20_000, rt.ToolSet("read_file", "search")
		sameRender(t, long, lx, tg)
	}
}

// TestIndexProperties: for random hostile journals and targets, the
// Index renders exactly as the events do.
//
//	go test ./render -run TestIndexProperties -rapid.seed=SEED
func TestIndexProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tg := rt.GenTarget(t)
		events := rt.GenJournal(t, tg.Producer()).Journal.Events()
		sameRender(t, events, indexOf(t, events), tg)
	})
}

// TestIndexRefusesDisorder: an event before its predecessor in total
// order is refused, so the caller sorts instead.
func TestIndexRefusesDisorder(t *testing.T) {
	x := render.NewIndex(bytes.NewReader(nil))
	a := journal.Event{Machine: "m", Seq: 2, Clock: 2, Kind: journal.KindUser}
	b := journal.Event{Machine: "m", Seq: 1, Clock: 1, Kind: journal.KindUser}
	if err := x.Add(&a, 0); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(&b, 0); !errors.Is(err, render.ErrOrder) {
		t.Fatalf("Add out of order: %v, want ErrOrder", err)
	}
}
