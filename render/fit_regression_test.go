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
