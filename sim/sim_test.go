package sim

import (
	"flag"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/transfer"
)

var (
	flagSeeds = flag.Int("sim.seeds", 2000, "number of random seeds TestSimulation runs")
	flagSeed  = flag.Uint64("sim.seed", 0, "run only this seed (verbose with -v)")
	flagFirst = flag.Uint64("sim.first", 1, "first seed of the run")
)

// TestSimulation runs many seeded random simulations (docs/PROTOCOL.md,
// "Testing"); each checks the invariants after every step and ends with a
// liveness phase. Afterwards every required cell of the fault matrix must
// have been reached at least once.
func TestSimulation(t *testing.T) {
	if *flagSeed != 0 {
		w := runSeed(*flagSeed, mutNone, testing.Verbose())
		if len(w.violations) > 0 {
			t.Fatal(w.report())
		}
		t.Logf("seed %d ok: %s; outcomes %v", w.seed, w.cfg, w.outcomes)
		return
	}
	start := time.Now()
	res := runMany(*flagFirst, *flagSeeds, mutNone, false, func(w *world) bool { return len(w.violations) > 0 })
	elapsed := time.Since(start)
	for _, w := range res.failed {
		t.Error(w.report())
	}
	t.Logf("%d seeds in %v (%.0f seeds/s); outcomes %v", *flagSeeds, elapsed.Round(time.Millisecond),
		float64(*flagSeeds)/elapsed.Seconds(), res.outcomes)
	t.Logf("fault matrix coverage (cells reached, summed over seeds):\n%s", res.cov.table())
	if *flagSeeds >= 1000 {
		if miss := res.cov.missing(); len(miss) > 0 {
			t.Errorf("fault matrix cells never reached: %v", miss)
		}
	}
}

type manyResult struct {
	failed   []*world
	cov      coverage
	outcomes map[transfer.Outcome]int
	firstBad uint64
}

// runMany runs seeds first..first+n-1 on all CPUs. With stopAtFirst it
// stops once a violation is found.
func runMany(first uint64, n int, mut mutation, stopAtFirst bool, failed func(*world) bool) manyResult {
	res := manyResult{cov: coverage{}, outcomes: map[transfer.Outcome]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	seeds := make(chan uint64)
	done := make(chan struct{})
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				w := runSeed(s, mut, false)
				mu.Lock()
				res.cov.add(w.cov)
				for k, v := range w.outcomes {
					res.outcomes[k] += v
				}
				if failed(w) {
					res.failed = append(res.failed, w)
					if res.firstBad == 0 || s < res.firstBad {
						res.firstBad = s
					}
					if stopAtFirst {
						select {
						case <-done:
						default:
							close(done)
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for s := first; s < first+uint64(n); s++ {
		select {
		case seeds <- s:
		case <-done:
			break feed
		}
	}
	close(seeds)
	wg.Wait()
	if len(res.failed) > 5 && !stopAtFirst {
		res.failed = res.failed[:5]
	}
	return res
}

// TestMutations proves the simulation has teeth: each mutation breaks one
// rule of the protocol, and the simulation must find a safety violation
// (two runners, a runner below the committed epoch, an epoch that went
// back, or a lost journal event), not merely an untidy end state.
func TestMutations(t *testing.T) {
	for _, mut := range []mutation{mutResolveReads, mutSendBeforePersist, mutNoSync, mutActivatingRuns} {
		t.Run(string(mut), func(t *testing.T) {
			res := runMany(1, 4000, mut, true, isSafety)
			if len(res.failed) == 0 {
				t.Fatalf("mutation %s: no safety violation in 4000 seeds: the simulation cannot see this rule", mut)
			}
			w := res.failed[0]
			t.Logf("mutation %s caught (seed %d): %s", mut, w.seed, w.violations[0])
		})
	}
}

// isSafety reports whether a run broke a safety invariant.
func isSafety(w *world) bool {
	for _, v := range w.violations {
		for _, k := range []string{"two runners", "below the committed epoch", "epoch went back", "journal events, but runners wrote"} {
			if strings.Contains(v, k) {
				return true
			}
		}
	}
	return false
}
