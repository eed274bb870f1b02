package vfstest

import (
	"fmt"
	"path/filepath"
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

// String names the crash point, as in "after 2 of 5 durable steps, before
// rename /cap/.tmp-manifest.json-3 -> /cap/manifest.json".
func (p CrashPoint) String() string {
	s := fmt.Sprintf("after %d of %d durable steps", p.Index, p.Total)
	if next, ok := p.Next(); ok {
		s += ", before " + next.String()
	}
	return s
}

// ForEachCrashPoint checks that op survives a power loss at every point
// where the loss could matter.
//
// It first runs op once to completion: setup(t, mem) builds a starting state
// on a fresh vfs.Mem, which is then made durable (Mem.SyncAll); op runs on a
// vfs.Faulty over that Mem, which records op's durable steps (File.Sync,
// SyncDir, Rename; see vfs.Op.Durable). Op must succeed. The Mem then
// crashes and check runs with Index == Total.
//
// Then, for each k in 0..Total-1, it builds a fresh Mem the same way and
// runs op again; just before op's durable step k+1, the Mem crashes and that
// step and every later operation of op fail with an error wrapping
// vfs.ErrCrashed, so op returns early. check(t, mem, point) then inspects
// the Mem as it is after the crash, in a subtest named after the point.
//
// A crash before durable step k+1 leaves exactly what a crash right after
// step k would, because a Mem changes its durable state only in durable
// steps. Check must hold at every point: typically "the old state or the new
// state, and it verifies". Op must be deterministic: the same durable steps
// in the same order on every run (paths may differ, as WriteFile's temporary
// names do); ForEachCrashPoint reports an error when the kinds differ.
func ForEachCrashPoint(t *testing.T, setup func(t testing.TB, fsys vfs.FS), op func(fsys vfs.FS) error, check func(t *testing.T, fsys vfs.FS, at CrashPoint)) {
	t.Helper()
	mem, faulty := crashFixture(t, setup)
	if err := op(faulty); err != nil {
		t.Fatalf("op failed without a crash: %v", err)
	}
	steps := faulty.DurableOps()
	mem.Crash()
	done := CrashPoint{Index: len(steps), Total: len(steps), Steps: steps}
	for k := range steps {
		at := CrashPoint{Index: k, Total: len(steps), Steps: steps}
		t.Run(subtestName(at), func(t *testing.T) {
			mem, faulty := crashFixture(t, setup)
			faulty.OnOp(crashBefore(mem, k))
			at.Err = op(faulty)
			checkSameSteps(t, steps[:k], faulty.DurableOps())
			check(t, mem, at)
		})
	}
	t.Run(subtestName(done), func(t *testing.T) { check(t, mem, done) })
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

// crashBefore returns an OnOp hook that crashes mem just before durable step
// k+1 and fails every operation from then on.
func crashBefore(mem *vfs.Mem, k int) func(vfs.OpRecord) error {
	seen, crashed := 0, false
	return func(rec vfs.OpRecord) error {
		if !crashed && rec.Op.Durable() {
			if seen == k {
				mem.Crash()
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
