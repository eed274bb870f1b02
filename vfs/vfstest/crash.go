package vfstest

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// CrashPoint tells a ForEachCrashPoint check where the crash happened.
type CrashPoint struct {
	// Index is how many durable steps of op completed before the crash:
	// 0 is a crash before the first, Total a crash after op returned.
	Index int
	// Total is the number of durable steps of a complete run of op.
	Total int
	// Steps are the durable steps of the complete run, in order.
	Steps []vfs.OpRecord
	// Err is what op returned in this run. After a crash it normally wraps
	// vfs.ErrCrashed; in the complete run (Index == Total) it is nil.
	Err error
	// Unsynced are the changes that were not durable when the power went
	// (vfs.Mem.Unsynced); Kept[i] tells whether this outcome of the crash
	// kept Unsynced[i].
	Unsynced []vfs.Change
	Kept     []bool
}

// Done reports whether op ran to completion before the crash.
func (p CrashPoint) Done() bool { return p.Index == p.Total }

// Next returns the durable step the crash prevented; ok is false when op
// ran to completion.
func (p CrashPoint) Next() (step vfs.OpRecord, ok bool) {
	if p.Done() {
		return vfs.OpRecord{}, false
	}
	return p.Steps[p.Index], true
}

// Where names the crash point, as in "after 2 of 5 durable steps, before
// rename /cap/.tmp-manifest.json-3 -> /cap/manifest.json".
func (p CrashPoint) Where() string {
	s := fmt.Sprintf("after %d of %d durable steps", p.Index, p.Total)
	if next, ok := p.Next(); ok {
		s += ", before " + next.String()
	}
	return s
}

// String names the crash point and the outcome, as in "after 3 of 5
// durable steps, before syncdir /cap; kept: rename /cap/a -> /cap/b; lost:
// create /cap/c".
func (p CrashPoint) String() string {
	s := p.Where()
	var kept, lost []string
	for i, c := range p.Unsynced {
		if p.Kept[i] {
			kept = append(kept, c.String())
		} else {
			lost = append(lost, c.String())
		}
	}
	if len(kept) > 0 {
		s += "; kept: " + strings.Join(kept, ", ")
	}
	if len(lost) > 0 {
		s += "; lost: " + strings.Join(lost, ", ")
	}
	return s
}

// ForEachCrashPoint checks that op survives a power loss at every point
// where the loss could matter, in every way the loss can turn out.
//
// It first runs op once to completion: setup(t, mem) builds a starting state
// on a fresh vfs.Mem, which is then made durable (Mem.SyncAll); op runs on a
// vfs.Faulty over that Mem, which records op's durable steps (File.Sync,
// SyncDir, Rename; see vfs.Op.Durable). Op must succeed. The end of a
// complete run is the last crash point (Index == Total); it is checked last,
// on a run of its own, so that what op records in the test's variables (the
// appends it acknowledged, say) belongs to the run being checked.
//
// Then, for each k in 0..Total-1, it builds a fresh Mem the same way and
// runs op again; just before op's durable step k+1 the power goes: that
// step and every later operation of op fail with an error wrapping
// vfs.ErrCrashed, so op returns early.
//
// At each crash point the changes not yet durable (vfs.Mem.Unsynced) may
// each survive or not. For each outcome (see Outcomes), a copy of the Mem
// crashes keeping that outcome's changes (vfs.Mem.CrashKeeping) and
// check(t, mem, point) inspects it, in a subtest named after the point and
// the outcome; outcomes that leave the same tree are checked once. Check
// must hold for every one: typically "the old state or the new state, and
// it verifies". Op must be deterministic: the same durable steps in the
// same order on every run (paths may differ, as WriteFile's temporary
// names do); ForEachCrashPoint reports an error when the kinds differ.
func ForEachCrashPoint(t *testing.T, setup func(t testing.TB, fsys vfs.FS), op func(fsys vfs.FS) error, check func(t *testing.T, fsys vfs.FS, at CrashPoint)) {
	t.Helper()
	_, faulty := crashFixture(t, setup)
	if err := op(faulty); err != nil {
		t.Fatalf("op failed without a crash: %v", err)
	}
	steps := faulty.DurableOps()
	for k := range steps {
		at := CrashPoint{Index: k, Total: len(steps), Steps: steps}
		t.Run(subtestName(at), func(t *testing.T) {
			mem, faulty := crashFixture(t, setup)
			faulty.OnOp(crashBefore(k))
			at.Err = op(faulty)
			checkSameSteps(t, steps[:k], faulty.DurableOps())
			forEachOutcome(t, mem, at, check)
		})
	}
	done := CrashPoint{Index: len(steps), Total: len(steps), Steps: steps}
	t.Run(subtestName(done), func(t *testing.T) {
		// Run op to completion again, so that state op leaves in the
		// test's variables (what it acknowledged) is this run's.
		mem, faulty := crashFixture(t, setup)
		if err := op(faulty); err != nil {
			t.Fatalf("op failed without a crash: %v", err)
		}
		checkSameSteps(t, steps, faulty.DurableOps())
		forEachOutcome(t, mem, done, check)
	})
}

// forEachOutcome crashes copies of mem in each outcome of its unsynced
// changes and runs check on each tree not seen before.
func forEachOutcome(t *testing.T, mem *vfs.Mem, at CrashPoint, check func(t *testing.T, fsys vfs.FS, at CrashPoint)) {
	t.Helper()
	at.Unsynced = mem.Unsynced()
	kept, sampled := Outcomes(at.Unsynced, *crashSeed, *crashSamples)
	if sampled {
		t.Logf("%d unsynced changes: checking %d outcomes, sampled with -vfstest.crashseed=%d -vfstest.crashsamples=%d",
			len(at.Unsynced), len(kept), *crashSeed, *crashSamples)
	}
	seen := map[string]bool{}
	for _, k := range kept {
		c := mem.Clone()
		c.CrashKeeping(func(i int) bool { return k[i] })
		key := treeKey(t, c)
		if seen[key] {
			continue
		}
		seen[key] = true
		at.Kept = k
		t.Run(outcomeName(k), func(t *testing.T) { check(t, c, at) })
	}
}

// treeKey renders the whole tree of fsys, to tell outcomes apart.
func treeKey(t *testing.T, fsys vfs.FS) string {
	snap := Snapshot(t, fsys, "/")
	keys := make([]string, 0, len(snap))
	for k := range snap {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q\n", k, snap[k])
	}
	return b.String()
}

// outcomeName names an outcome by the changes it keeps, one digit each:
// "keep_101" kept the first and the third of three; "none" had nothing to
// choose.
func outcomeName(kept []bool) string {
	if len(kept) == 0 {
		return "none"
	}
	b := []byte("keep_")
	for _, k := range kept {
		b = append(b, "01"[boolInt(k)])
	}
	return string(b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// crashFixture returns a fresh Mem holding setup's state, durably, and a
// Faulty over it.
func crashFixture(t *testing.T, setup func(t testing.TB, fsys vfs.FS)) (*vfs.Mem, *vfs.Faulty) {
	t.Helper()
	mem := vfs.NewMem()
	if setup != nil {
		setup(t, mem)
	}
	mem.SyncAll()
	return mem, vfs.NewFaulty(mem)
}

// crashBefore returns an OnOp hook that cuts the power just before durable
// step k+1: it fails every operation from then on, so the Mem below keeps
// the state of that moment for forEachOutcome to crash.
func crashBefore(k int) func(vfs.OpRecord) error {
	seen, crashed := 0, false
	return func(rec vfs.OpRecord) error {
		if !crashed && rec.Op.Durable() {
			if seen == k {
				crashed = true
			}
			seen++
		}
		if crashed {
			return vfs.ErrCrashed
		}
		return nil
	}
}

// checkSameSteps reports a run whose durable steps before the crash differ
// in kind from the complete run's.
func checkSameSteps(t *testing.T, want, got []vfs.OpRecord) {
	t.Helper()
	// The step at the crash is recorded too, as a failure; drop it.
	if len(got) > len(want) {
		got = got[:len(want)]
	}
	for i := range want {
		if i >= len(got) || got[i].Op != want[i].Op {
			t.Errorf("op is not deterministic: durable step %d was %v in the complete run, got %v", i+1, want[i], stepAt(got, i))
			return
		}
	}
}

func stepAt(steps []vfs.OpRecord, i int) string {
	if i < len(steps) {
		return steps[i].String()
	}
	return "nothing"
}

// subtestName is a short, stable name for a crash point: the step index and
// what it interrupted, without the digits of temporary names.
func subtestName(at CrashPoint) string {
	next, ok := at.Next()
	if !ok {
		return fmt.Sprintf("%02d_done", at.Index)
	}
	base := filepath.Base(next.Path)
	if next.NewPath != "" {
		base = filepath.Base(next.NewPath)
	}
	if strings.HasPrefix(base, vfs.TempPrefix) {
		base = vfs.TempPrefix + "*"
	}
	return fmt.Sprintf("%02d_before_%s_%s", at.Index, next.Op, base)
}
