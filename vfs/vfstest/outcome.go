package vfstest

import (
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

var (
	crashSeed = flag.Uint64("vfstest.crashseed", 1,
		"seed of the crash outcomes ForEachCrashPoint samples when there are too many to check all")
	crashSamples = flag.Int("vfstest.crashsamples", 16,
		"random crash outcomes ForEachCrashPoint checks beyond the chosen ones, when there are too many to check all")
)

// MaxExhaustive is the most unsynced changes whose every combination
// Outcomes lists; with more it samples.
const MaxExhaustive = 8

// Outcomes lists the ways a crash can treat changes (as vfs.Mem.Unsynced
// lists them): each is a set of kept changes that holds, with every change,
// the changes it needs. With at most MaxExhaustive changes it lists every
// such set. With more (sampled is then true) it lists losing everything,
// keeping everything, and for each change the smallest set that keeps it
// and the largest that loses it, so that both outcomes of every change are
// seen, and then samples random sets, drawn with seed.
func Outcomes(changes []vfs.Change, seed uint64, samples int) (kept [][]bool, sampled bool) {
	n := len(changes)
	seen := map[string]bool{}
	add := func(set []bool) {
		closeNeeds(changes, set)
		if key := outcomeName(set); !seen[key] {
			seen[key] = true
			kept = append(kept, set)
		}
	}
	if n <= MaxExhaustive {
		for bits := 0; bits < 1<<n; bits++ {
			set := make([]bool, n)
			for i := range set {
				set[i] = bits&(1<<i) != 0
			}
			add(set)
		}
		return kept, false
	}
	add(make([]bool, n))
	add(all(n, true))
	for i := range changes {
		only := make([]bool, n)
		only[i] = true
		add(only)
		add(without(changes, i))
	}
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	for range samples {
		set := make([]bool, n)
		for i := range set {
			set[i] = rng.IntN(2) == 1
		}
		add(set)
	}
	return kept, true
}

// closeNeeds adds to set every change a kept change needs.
func closeNeeds(changes []vfs.Change, set []bool) {
	for i := len(changes) - 1; i >= 0; i-- {
		if set[i] {
			for _, j := range changes[i].Needs {
				set[j] = true
			}
		}
	}
}

// without is the largest set that loses change i: everything but i and
// the changes that need it.
func without(changes []vfs.Change, i int) []bool {
	set := all(len(changes), true)
	set[i] = false
	for j, c := range changes {
		for _, k := range c.Needs {
			if k == i {
				set[j] = false
			}
		}
	}
	return set
}

func all(n int, v bool) []bool {
	set := make([]bool, n)
	for i := range set {
		set[i] = v
	}
	return set
}

// CrashRandom crashes mem in one outcome of its unsynced changes, drawn
// with seed: each change kept or lost at random, with what it needs. It
// logs the seed and how many changes the crash kept.
func CrashRandom(t testing.TB, mem *vfs.Mem, seed uint64) {
	t.Helper()
	var kept, total int
	// The draw and the crash are one step: a node under test may go on
	// writing, and a change made between them would shift the indices.
	mem.CrashChoosing(func(changes []vfs.Change) func(int) bool {
		rng := rand.New(rand.NewPCG(seed, uint64(len(changes))))
		set := make([]bool, len(changes))
		for i := range set {
			set[i] = rng.IntN(2) == 1
		}
		closeNeeds(changes, set)
		for _, k := range set {
			kept += boolInt(k)
		}
		total = len(changes)
		return func(i int) bool { return set[i] }
	})
	t.Logf("crash with seed %d kept %d of %d unsynced changes", seed, kept, total)
}

// CrashSeed is the seed the -vfstest.crashseed flag gives, for tests that
// call CrashRandom.
func CrashSeed() uint64 { return *crashSeed }
