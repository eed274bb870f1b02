package render_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
	"pgregory.net/rapid"
)

// TestRenderProperties renders random hostile journals for random targets
// and windows and checks: the provider's validator passes; every call has
// exactly one result and every result its call; no reasoning, signature
// or item ID reaches a model that did not produce it; the estimate fits
// the window whenever the instructions, tools and the newest unit cut to
// its minimum fit (render.MinimumFits); rendering is deterministic.
//
// rapid prints the seed of a failure; replay it with
//
//	go test ./render -run TestRenderProperties -rapid.seed=SEED
//
// or with the -rapid.failfile it names.
func TestRenderProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tg := rendertest.GenTarget(t)
		c := rendertest.GenJournal(t, tg.Producer())
		events := c.Journal.Events()
		p, err := render.NewPlan(events, tg)
		if err == render.ErrEmpty {
			return
		}
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		body, err := wire.Body(p)
		if err != nil {
			t.Fatalf("body: %v", err)
		}
		if err := rendertest.Validate(tg, body); err != nil {
			t.Fatalf("%s %s: %v\nbody: %s", tg.API, tg.Model, err, body)
		}
		if err := rendertest.ValidateReport(tg, body, &p.Report); err != nil {
			t.Fatalf("%s %s: %v\nbody: %s", tg.API, tg.Model, err, body)
		}
		checkPairs(t, p)
		checkSecrets(t, tg, c, body)
		checkWindow(t, p)
		if e := p.Report.Tokens; e.Estimated > e.Budget && render.MinimumFits(events, tg) {
			t.Fatalf("estimate %d exceeds budget %d although the instructions, tools and the newest unit cut to its minimum fit", e.Estimated, e.Budget)
		}
		again, _, err := wire.Render(events, tg)
		if err != nil || !bytes.Equal(body, again) {
			t.Fatalf("second render differs (err %v)", err)
		}
	})
}

func checkPairs(t *rapid.T, p *render.Plan) {
	for _, it := range p.Items {
		if it.Step == nil {
			continue
		}
		calls := it.Step.Calls()
		if len(calls) != len(it.Step.Results) {
			t.Fatalf("step with %d calls has %d results", len(calls), len(it.Step.Results))
		}
		for k, c := range calls {
			if it.Step.Results[k].CallID != c.ID {
				t.Fatalf("result %d answers %q, call is %q", k, it.Step.Results[k].CallID, c.ID)
			}
		}
	}
}

func checkSecrets(t *rapid.T, tg render.Target, c *rendertest.Case, body []byte) {
	own := tg.Producer()
	for _, s := range c.Secrets {
		if s.Producer != own && bytes.Contains(body, []byte(s.Text)) {
			t.Fatalf("%s's secret %q reached %s", s.Producer.Model, s.Text, own.Model)
		}
	}
}

func checkWindow(t *rapid.T, p *render.Plan) {
	e := p.Report.Tokens
	if !e.OverBudget && e.Estimated > e.Budget {
		t.Fatalf("estimate %d exceeds budget %d", e.Estimated, e.Budget)
	}
	if e.OverBudget && p.Report.KeptUnits > 1 {
		t.Fatalf("over budget while keeping %d units", p.Report.KeptUnits)
	}
	if (p.Report.DroppedUnits > 0) != (p.Report.Digest != "") {
		t.Fatalf("dropped %d units, digest %q", p.Report.DroppedUnits, p.Report.Digest)
	}
	if p.Report.Digest != "" && !strings.Contains(string(mustItemsText(p)), p.Report.Digest) {
		t.Fatalf("digest not in the request")
	}
}

func mustItemsText(p *render.Plan) []byte {
	var b bytes.Buffer
	for _, it := range p.Items {
		b.WriteString(it.Text)
	}
	return b.Bytes()
}

// TestLongJournal renders a 20,000-event journal, ending with a user
// turn, into a 128k window for every API: the requests are valid, fill
// at least 90% of the window, fit it, and carry a digest.
func TestLongJournal(t *testing.T) {
	events := rendertest.Long(20_000, rendertest.Claude)
	events = append(events, journal.Event{Kind: journal.KindUser, Body: []byte(`{"text":"Next task."}`)})
	for _, tg := range rendertest.Targets {
		tg.Window = 128_000
		tg.Tools = rendertest.ToolSet("read_file", "search")
		body, rep, err := wire.Render(events, tg)
		if err != nil {
			t.Fatalf("%s %s: %v", tg.API, tg.Model, err)
		}
		if err := rendertest.Validate(tg, body); err != nil {
			t.Fatalf("%s %s: %v", tg.API, tg.Model, err)
		}
		e := rep.Tokens
		if e.OverBudget || e.Estimated > tg.Window || e.Estimated < tg.Window*9/10 || rep.DroppedUnits == 0 || rep.Digest == "" {
			t.Errorf("%s %s: estimate %d of %d, dropped %d units", tg.API, tg.Model, e.Estimated, tg.Window, rep.DroppedUnits)
		}
	}
}
