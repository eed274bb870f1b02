package sim

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/transfer"
)

// opportunity is one place a fault can be injected: the k-th time the
// world asks about (kind, label).
type opportunity struct {
	kind  faultKind
	label string
	k     int
}

func (o opportunity) String() string { return fmt.Sprintf("%s %s #%d", o.kind, o.label, o.k) }

// plan replaces random faults with planned ones (the exhaustive sweep).
// With record set it fires nothing and lists every opportunity.
type plan struct {
	fire   []opportunity
	seen   map[string]int
	record bool
	opps   []opportunity
}

var swept = map[faultKind]bool{faultDropReq: true, faultDropReply: true, faultDup: true, faultLate: true,
	faultCrashBefore: true, faultCrashAfter: true, faultNoSpace: true}

func (p *plan) hit(kind faultKind, label string) bool {
	key := string(kind) + "|" + label
	p.seen[key]++
	o := opportunity{kind, label, p.seen[key]}
	if p.record && swept[kind] {
		p.opps = append(p.opps, o)
	}
	for _, f := range p.fire {
		if f == o {
			return true
		}
	}
	return false
}

// scenario is a deterministic move a→b, with base faults that steer it
// through the resolve or abort paths.
type scenario struct {
	name string
	base []opportunity
	// prepareFails makes the target's prepare fail (a missing secret).
	prepareFails bool
}

var scenarios = []scenario{
	{name: "happy path"},
	{name: "activate lost, resolve", base: []opportunity{{faultDropReq, "msg:activate", 1}}},
	{name: "prepare fails, abort", prepareFails: true},
}

// runScenario runs sc with the extra planned faults and returns the world.
func runScenario(sc scenario, p *plan) *world {
	cfg := config{nodes: 3, steps: 0, timeout: 4, tickEvery: 3, rounds: 1, p: map[faultKind]float64{}}
	if sc.prepareFails {
		cfg.p[faultPrepare] = 1
	}
	w := newWorld(1, cfg, mutNone)
	p.seen = map[string]int{}
	p.fire = append(p.fire, sc.base...)
	w.plan = p
	a := w.nodes["a"]
	w.runStep(a)
	w.startMove(a, "b")
	for i := 0; i < 150 && len(w.violations) == 0; i++ {
		w.now++
		w.timeouts()
		for len(w.ready()) > 0 {
			w.deliver(w.take(w.ready()[0]))
		}
		w.ticks()
		if r := w.runner(); r != nil && w.now%5 == 0 {
			w.runStep(r)
		}
		for _, id := range w.ids {
			if n := w.nodes[id]; !n.up && w.now-n.downAt > 4 {
				w.do(n, n.restart)
			}
		}
		w.operate()
		w.check()
	}
	if len(w.violations) == 0 {
		w.settle()
	}
	return w
}

// TestSingleFaultSweep injects, one run per case, every single fault at
// every opportunity of a move: each message x {request lost, reply lost,
// duplicate, late} and each durable write x {crash before, crash after,
// ENOSPC}, over the happy path and over the resolve and abort paths.
func TestSingleFaultSweep(t *testing.T) {
	total := 0
	for _, sc := range scenarios {
		rec := &plan{record: true}
		base := runScenario(sc, rec)
		if len(base.violations) > 0 {
			t.Fatalf("%s without extra fault: %s", sc.name, base.report())
		}
		outcomes := map[string]map[string]int{}
		for _, o := range rec.opps {
			w := runScenario(sc, &plan{fire: []opportunity{o}})
			total++
			if len(w.violations) > 0 {
				t.Errorf("%s + %s: %s", sc.name, o, w.report())
				continue
			}
			row := fmt.Sprintf("%-13s %s", o.kind, o.label)
			if outcomes[row] == nil {
				outcomes[row] = map[string]int{}
			}
			outcomes[row][outcomeSummary(w)]++
		}
		t.Logf("%s: %d single-fault cases\n%s", sc.name, len(rec.opps), outcomeTable(outcomes))
	}
	t.Logf("%d cases in all", total)
}

// outcomeSummary names who runs at the end and the sources' outcomes.
func outcomeSummary(w *world) string {
	var outs []string
	for k, v := range w.outcomes {
		if k != transfer.OutcomeWaiting {
			outs = append(outs, fmt.Sprintf("%s×%d", k, v))
		}
	}
	sort.Strings(outs)
	r := w.runner()
	return fmt.Sprintf("%s@%d %s", r.id, r.running, strings.Join(outs, ","))
}

func outcomeTable(m map[string]map[string]int) string {
	var rows []string
	for row, outs := range m {
		var cells []string
		for o, n := range outs {
			cells = append(cells, fmt.Sprintf("%s (%d)", o, n))
		}
		sort.Strings(cells)
		rows = append(rows, fmt.Sprintf("  %-40s -> %s", row, strings.Join(cells, "; ")))
	}
	sort.Strings(rows)
	return strings.Join(rows, "\n")
}
