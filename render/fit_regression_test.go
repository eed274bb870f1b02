package render_test

import (
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
)

// TestFitCountsStubsOfAUnitOnce is the regression case of rapid seed
// 3269246591758416045 (TestRenderProperties): when the fitter checked
// whether a step and everything older fit without a digest, it built the
// step a second time, found its stub tool declarations already reserved and
// under-counted it, so the plan came out over budget while keeping three
// units. At every window the estimate must hold, or only the newest unit is
// kept.
func TestFitCountsStubsOfAUnitOnce(t *testing.T) {
	p := journal.Producer{Provider: "anthropic", API: "messages", Model: "claude-opus-4-8"}
	long := "fc_x|" + strings.Repeat("y", 450)
	j := (&rt.Journal{}).User("").
		Call(p, "s1", long+"3", "read_file", `{}`).
		Call(p, "s1", long+"4", "write_file", `{}`).
		Result(long+"3", "read_file", "").
		Result(long+"4", "write_file", "").
		User("")
	for w := 150; w <= 400; w++ {
		tg := render.Target{API: render.Anthropic, Model: p.Model, Window: w}
		plan, err := render.NewPlan(j.Events(), tg)
		if err != nil {
			t.Fatalf("window %d: %v", w, err)
		}
		e := plan.Report.Tokens
		if e.OverBudget && plan.Report.KeptUnits > 1 {
			t.Fatalf("window %d: over budget (%d > %d) while keeping %d units", w, e.Estimated, e.Budget, plan.Report.KeptUnits)
		}
		if !e.OverBudget && e.Estimated > e.Budget {
			t.Fatalf("window %d: estimate %d exceeds budget %d", w, e.Estimated, e.Budget)
		}
	}
}

// TestFitTruncatesWithStubDeclarations is issue 10 item 21: the newest
// unit must be cut and its tools are not in the target's tool set, so
// they are declared as stubs. The cut sized the unit without those
// declarations and the estimate ended over the window (2077 of 2000,
// 8054 of 8000). Now the cut counts them as the cost does: at every
// window where the minimum fits, the estimate fits, with and without
// --tools.
func TestFitTruncatesWithStubDeclarations(t *testing.T) {
	j := (&rt.Journal{}).System("Be careful.").User("Show me the logs.").
		Call(rt.Claude, "s1", "toolu_1", "read_file", `{"path":"/var/log/a"}`).
		Call(rt.Claude, "s1", "toolu_2", "search", `{"q":"err"}`).
		Call(rt.Claude, "s1", "toolu_3", "run_tests", `{}`).
		Result("toolu_1", "read_file", strings.Repeat("log line with some words ", 2000)).
		Result("toolu_2", "search", strings.Repeat("hit ", 3000)).
		Result("toolu_3", "run_tests", "ok")
	for _, model := range []string{"claude-sonnet-4-6", "claude-opus-5-5"} {
		for _, tools := range [][]render.Tool{nil, rt.ToolSet("read_file", "search", "run_tests")} {
			for _, w := range []int{300, 700, 1000, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 7000, 8000, 9000} {
				tg := render.Target{API: render.Anthropic, Model: model, Window: w, Tools: tools}
				p, err := render.NewPlan(j.Events(), tg)
				if err != nil {
					t.Fatalf("%s window %d: %v", model, w, err)
				}
				e := p.Report.Tokens
				fits := render.MinimumFits(j.Events(), tg)
				if fits && (e.Estimated > w || e.OverBudget) {
					t.Errorf("%s, %d tools, window %d: estimate %d (over budget %v) although the minimum fits", model, len(tools), w, e.Estimated, e.OverBudget)
				}
				if (w == 2000 || w == 8000) && !fits {
					t.Errorf("%s window %d: the minimum should fit", model, w)
				}
				if (w == 2000 || w == 8000) && model == "claude-sonnet-4-6" && (p.Report.KeptUnits != 2 || p.Report.Digest != "") {
					t.Errorf("%s window %d: kept %d units, digest %q; the user's request should stay", model, w, p.Report.KeptUnits, p.Report.Digest)
				}
			}
		}
	}
}
