package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/agentcapsule/capsule/transfer"
)

// check verifies the invariants that must hold after every step
// (docs/PROTOCOL.md, "Invariants").
func (w *world) check() {
	var runners []*node
	for _, id := range w.ids {
		if n := w.nodes[id]; n.up && n.running > 0 {
			runners = append(runners, n)
		}
	}
	if len(runners) > 1 {
		w.violate("two runners: %s@%d and %s@%d", runners[0].id, runners[0].running, runners[1].id, runners[1].running)
	}
	for _, r := range runners {
		if e, ok := r.mayRun(); !ok || e != r.running {
			w.violate("%s runs at epoch %d although the rule allows %d (%v)", r.id, r.running, e, ok)
		}
		if r.running < w.committed {
			w.violate("%s runs at epoch %d below the committed epoch %d", r.id, r.running, w.committed)
		}
		if len(r.journal) != len(w.ghost) || (len(w.ghost) > 0 && r.journal[len(r.journal)-1].ID != w.ghost[len(w.ghost)-1].ID) {
			w.violate("%s runs with %d journal events, but runners wrote %d", r.id, len(r.journal), len(w.ghost))
		}
	}
	if w.now%8 == 0 || !w.faultsOn {
		for _, id := range w.ids {
			w.checkStaging(w.nodes[id])
		}
	}
}

// checkStaging: a node keeps staging only for its pending move.
func (w *world) checkStaging(n *node) {
	if !n.up {
		return
	}
	pd := n.target.Pending()
	for _, mv := range n.stagingMoves() {
		if pd == nil || pd.Move != mv {
			w.violate("%s keeps staging for %s, which is not pending", n.id, mv)
		}
	}
}

// checkHolder verifies the runner's state: every blob present with its
// digest, the journal chain intact.
func (w *world) checkHolder(n *node) {
	for _, b := range n.inv {
		if !n.hasBlob(b) {
			w.violate("%s runs without blob %s", n.id, b.Digest.Short())
		}
	}
	if err := checkChain(n.journal); err != nil {
		w.violate("%s runs with a broken journal: %v", n.id, err)
	}
	for _, e := range n.journal {
		if e.Epoch > n.running {
			w.violate("%s runs at %d with an event of epoch %d", n.id, n.running, e.Epoch)
		}
	}
}

// step is one step of the safety phase: timeouts, one delivery, and
// random runner work, moves, crashes, restarts, partitions and zombies.
func (w *world) step() {
	w.now++
	w.timeouts()
	if idx := w.ready(); len(idx) > 0 {
		w.deliver(w.take(idx[w.rng.IntN(len(idx))]))
	}
	w.ticks()
	if r := w.runner(); r != nil {
		if w.rng.Float64() < w.cfg.pAppend {
			w.runStep(r)
		}
		if r.up && w.rng.Float64() < w.cfg.pMove {
			w.startMove(r, w.randomPeer(r.id))
		}
	}
	for _, id := range w.ids {
		if n := w.nodes[id]; n.up && n.source != nil && !n.source.Done() && w.rng.Float64() < w.cfg.pMove {
			w.startMove(n, w.randomPeer(n.id)) // must be refused: one move at a time
		}
	}
	w.chaos()
	w.operate()
	w.check()
}

// operate is the operator's `capsule agent start` on every node that does
// not run the agent, at every step: it starts the runner whenever the rule
// the node runs by (mayRun, the same the runner and StartAgent consult)
// allows it. A rule that lets a frozen source run shows up as two runners.
func (w *world) operate() {
	for _, id := range w.ids {
		n := w.nodes[id]
		if !n.up || n.running > 0 {
			continue
		}
		e, ok := n.mayRun()
		if !ok {
			if n.source != nil && n.source.Frozen() {
				w.cover(coverOperator, sourcePhase(n.source.Phase()))
			}
			continue
		}
		n.running = e
		w.trace("%s operator starts the agent at %d", n.id, e)
		w.checkHolder(n)
	}
}

// mayRun is the rule a node runs the agent by (transfer.MayRun), broken
// on purpose by the mutation activating-not-frozen.
func (n *node) mayRun() (uint64, bool) {
	if n.w.mutation == mutActivatingRuns && n.source != nil && n.source.Phase() == "activating" && n.target.Holder() > 0 {
		return n.target.Holder(), true
	}
	return transfer.MayRun(n.target, n.source)
}

func (w *world) randomPeer(not string) string {
	for {
		if id := w.ids[w.rng.IntN(len(w.ids))]; id != not {
			return id
		}
	}
}

func (w *world) chaos() {
	for _, id := range w.ids {
		n := w.nodes[id]
		switch {
		case n.up && w.rng.Float64() < w.cfg.pCrash:
			w.crashNode(n)
		case !n.up && w.now-n.downAt > 2 && w.rng.Float64() < w.cfg.pRestart:
			w.do(n, n.restart)
		}
	}
	if w.rng.Float64() < w.cfg.pCut {
		a, b := w.ids[w.rng.IntN(len(w.ids))], w.ids[w.rng.IntN(len(w.ids))]
		if a > b {
			a, b = b, a
		}
		if a != b {
			k := [2]string{a, b}
			w.cuts[k] = !w.cuts[k]
		}
	}
	if w.rng.Float64() < w.cfg.pStale {
		w.injectStale()
	}
}

// settle is the liveness phase: no new faults, every node up, every link
// healed; the protocol must reach quiescence with exactly one runner, no
// staging and no pending move anywhere.
func (w *world) settle() {
	w.faultsOn = false
	clear(w.cuts)
	for step := 0; step < 3000 && len(w.violations) == 0; step++ {
		w.now++
		for _, id := range w.ids {
			if n := w.nodes[id]; !n.up {
				w.do(n, n.restart)
			}
		}
		w.timeouts()
		for _, i := range slices.Backward(w.ready()) {
			w.deliver(w.take(i))
		}
		w.ticks()
		w.operate()
		w.check()
		if w.quiet() {
			w.checkEnd()
			return
		}
	}
	if len(w.violations) == 0 {
		w.violate("no quiescence after the liveness phase (%d messages in flight)", len(w.net))
	}
}

func (w *world) quiet() bool {
	if len(w.net) > 0 {
		return false
	}
	for _, id := range w.ids {
		n := w.nodes[id]
		if !n.up || n.out != nil || (n.source != nil && !n.source.Done()) {
			return false
		}
	}
	return true
}

func (w *world) checkEnd() {
	r := w.runner()
	if r == nil {
		w.violate("nobody runs the agent at quiescence")
		return
	}
	w.checkHolder(r)
	for _, id := range w.ids {
		n := w.nodes[id]
		if pd := n.target.Pending(); pd != nil {
			w.violate("%s still has move %s pending at quiescence", n.id, pd.Move)
		}
		if len(n.stagingMoves()) > 0 {
			w.violate("%s still has staging at quiescence", n.id)
		}
		if n.source != nil && n.source.Outcome() == transfer.OutcomeStale {
			w.violate("%s's move %s ended stale without any zombie", n.id, n.source.State().Move)
		}
	}
}

// runSeed runs one random simulation and returns its world.
func runSeed(seed uint64, mut mutation, verbose bool) *world {
	cfg := randomConfig(rand.New(rand.NewPCG(seed, 1)))
	w := newWorld(seed, cfg, mut)
	w.verbose = verbose
	w.trace("seed %d: %s", seed, cfg)
	for i := 0; i < cfg.steps && len(w.violations) == 0; i++ {
		w.step()
	}
	if len(w.violations) == 0 {
		w.settle()
	}
	return w
}

func (w *world) report() string {
	s := fmt.Sprintf("seed %d (%s): %v\n", w.seed, w.cfg, w.violations)
	start := max(0, len(w.traceBuf)-60)
	for _, l := range w.traceBuf[start:] {
		s += "  " + l.String() + "\n"
	}
	return s + fmt.Sprintf("replay: go test ./sim -run TestSimulation -sim.seed=%d -v\n", w.seed)
}
