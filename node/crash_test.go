package node

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// powerLosses are the outcomes a node power-loss test cuts the power in:
// every unsynced change lost, every one kept, and a few drawn at random
// (seeds from -vfstest.crashseed on).
func powerLosses() []struct {
	name  string
	crash func(t *testing.T, mem *vfs.Mem)
} {
	out := []struct {
		name  string
		crash func(t *testing.T, mem *vfs.Mem)
	}{
		{"lose_all", func(t *testing.T, mem *vfs.Mem) { mem.Crash() }},
		{"keep_all", func(t *testing.T, mem *vfs.Mem) { mem.CrashKeeping(func(int) bool { return true }) }},
	}
	for i := range uint64(3) {
		seed := vfstest.CrashSeed() + i
		out = append(out, struct {
			name  string
			crash func(t *testing.T, mem *vfs.Mem)
		}{fmt.Sprintf("seed_%d", seed), func(t *testing.T, mem *vfs.Mem) { vfstest.CrashRandom(t, mem, seed) }})
	}
	return out
}

// TestTargetPowerLossAfterActivate cuts the target's power while it runs
// the agent it just took over, in several outcomes of the changes not yet
// synced (powerLosses). The HOLDER record was durable before the agent
// started, so the restarted target holds the agent again and runs it; the
// source stays retired.
func TestTargetPowerLossAfterActivate(t *testing.T) {
	for _, pl := range powerLosses() {
		t.Run(pl.name, func(t *testing.T) { targetPowerLossAfterActivate(t, pl.crash) })
	}
}

func targetPowerLossAfterActivate(t *testing.T, crash func(t *testing.T, mem *vfs.Mem)) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaulty(mem)
	cl := newCluster(t, nodeOpts{}, nodeOpts{fsys: ffs})
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, "")
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	waitSteps(t, b, id, 5)
	crash(t, mem)
	ffs.Fail(vfs.OpAny, "", vfs.ErrIO) // the dead machine writes nothing more
	b.Close(context.Background())
	ffs.Clear()

	b2 := newNode(t, b.cfg.Dir, nodeOpts{fsys: mem})
	if b2.ID() != b.ID() {
		t.Fatalf("the key did not survive: %s became %s", b.ID(), b2.ID())
	}
	waitSteps(t, b2, id, 3)
	st, err := b2.Agent(t.Context(), id)
	if err != nil || st.Epoch != 2 {
		t.Fatalf("after power loss: %+v, %v; want holder at epoch 2", st, err)
	}
	cl.nodes[1] = b2
	if got := cl.running(id); len(got) != 1 || got[0] != b2.ID() {
		t.Fatalf("runners = %v, want only the target", got)
	}
	if _, err := b2.StopAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	r, err := b2.Report(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) > 0 {
		t.Errorf("capsule after power loss: %v", r.Problems)
	}
	// A crash may cut a step between its counter write and its journaled
	// result: at most one step is unaccounted for, never one run twice.
	if r.Counter < uint64(r.CounterResults) || r.Counter > uint64(r.CounterResults)+1 {
		t.Errorf("counter %d vs %d journaled results", r.Counter, r.CounterResults)
	}
	if _, err := mem.Stat(filepath.Join(b.cfg.Dir, "agents", id, record.HolderFile)); err != nil {
		t.Errorf("holder record lost in the crash: %v", err)
	}
}

// TestTargetPowerLossWithFreshBlobs cuts the target's power while its
// staging flush syncs the blobs the prepare brought, which until then sit
// unsynced in the fresh folder (cas.go finishFresh), in several outcomes of
// the changes not yet synced (powerLosses). The restarted target has no
// torn blob under any name in its store; the source rolled back and runs
// the agent; a later move to the target commits and its capsule verifies.
func TestTargetPowerLossWithFreshBlobs(t *testing.T) {
	for _, pl := range powerLosses() {
		t.Run(pl.name, func(t *testing.T) { targetPowerLossWithFreshBlobs(t, pl.crash) })
	}
}

func targetPowerLossWithFreshBlobs(t *testing.T, crash func(t *testing.T, mem *vfs.Mem)) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaulty(mem)
	cl := newCluster(t, nodeOpts{}, nodeOpts{fsys: ffs})
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, "")
	late := 0
	a.hooks.beforeFreeze = func(agent string) { // changed after pre-copy: it travels with the prepare
		late++
		p := filepath.Join(a.cfg.Dir, "agents", agent, workDir, "late.bin")
		if err := vfs.WriteFile(a.fsys, p, bytes.Repeat([]byte{byte(late)}, 64<<10), 0o644); err != nil {
			t.Error(err)
		}
	}
	var once sync.Once
	crashed := make(chan struct{})
	freshPart := string(filepath.Separator) + freshDir + string(filepath.Separator)
	ffs.OnOp(func(rec vfs.OpRecord) error {
		if rec.Op != vfs.OpSync || !strings.Contains(rec.Path, freshPart) {
			return nil
		}
		once.Do(func() {
			crash(t, mem)
			ffs.Fail(vfs.OpAny, "", vfs.ErrIO) // the dead machine writes nothing more
			close(crashed)
		})
		return vfs.ErrIO
	})
	res := move(t, a, b, id)
	select {
	case <-crashed:
	default:
		t.Fatalf("the move never synced a fresh blob (result %+v): nothing was tested", res)
	}
	if res.Outcome == api.OutcomeCommitted {
		t.Fatalf("move committed on a target that lost power before PREPARED: %+v", res)
	}
	addr := b.Addr()
	b.Close(context.Background())
	ffs.OnOp(nil)
	ffs.Clear()

	b2 := newNodeAt(t, b.cfg.Dir, addr, nodeOpts{fsys: mem})
	cl.nodes[1] = b2
	agentDir := filepath.Join(b.cfg.Dir, "agents", id)
	if _, err := mem.Stat(filepath.Join(agentDir, freshDir)); err == nil {
		t.Errorf("the restarted target kept the unsynced fresh folder")
	}
	ents, _ := mem.ReadDir(filepath.Join(agentDir, casDir))
	for _, e := range ents {
		d, err := digest.FromHex(e.Name())
		if err != nil {
			continue // a temporary file
		}
		data, err := vfs.ReadFile(mem, filepath.Join(agentDir, casDir, e.Name()))
		if err != nil || digest.FromBytes(data) != d {
			t.Errorf("store name %s holds other bytes after the power loss (%v)", d.Short(), err)
		}
	}
	waitSteps(t, a, id, 3)
	// Staging the crash kept (its entries may have become durable on their
	// own) belongs to a move still pending in the target's records: it goes
	// when the source's retried abort arrives.
	waitNoStaging(t, cl, a, id)
	cl.checkHolder(a, id)
	// The rolled-back move's abort reaches the restarted target first.
	var res2 api.MoveResult
	for deadline := time.Now().Add(20 * time.Second); ; {
		var err error
		res2, err = a.Move(t.Context(), id, api.MoveRequest{To: string(b2.ID())}, nil)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "in progress") || time.Now().After(deadline) {
			t.Fatalf("move after the restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res2.Outcome != api.OutcomeCommitted {
		t.Fatalf("move after the restart: %+v", res2)
	}
	waitSteps(t, b2, id, 3)
	cl.checkHolder(b2, id)
	if _, err := b2.StopAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	ag, _ := b2.getTenant(id)
	if probs := verifyCapsule(mem, ag.capsule()); len(probs) > 0 {
		t.Errorf("target capsule: %v", probs)
	}
}

// TestTargetPowerLossDuringPromote cuts the target's power while it
// promotes the staging of a move it just took over (the HOLDER record is
// durable; the live capsule and workspace are being replaced by renames
// not yet synced), in several outcomes of those changes (powerLosses). The
// restarted target finishes the promotion (recover.go cleanStaging): the
// move commits, the target runs the agent at the new epoch with a capsule
// that verifies, and the source stays retired.
func TestTargetPowerLossDuringPromote(t *testing.T) {
	for _, pl := range powerLosses() {
		t.Run(pl.name, func(t *testing.T) { targetPowerLossDuringPromote(t, pl.crash) })
	}
}

func targetPowerLossDuringPromote(t *testing.T, crash func(t *testing.T, mem *vfs.Mem)) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaulty(mem)
	cl := newCluster(t, nodeOpts{}, nodeOpts{fsys: ffs})
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, "")
	waitSteps(t, a, id, 3)
	agentDir := filepath.Join(b.cfg.Dir, "agents", id)
	var once sync.Once
	crashed, promoting := make(chan struct{}), false
	ffs.OnOp(func(rec vfs.OpRecord) error {
		if rec.Op == vfs.OpRename && rec.NewPath == filepath.Join(agentDir, capsuleDir) {
			promoting = true
		}
		if !promoting || rec.Op != vfs.OpSyncDir || rec.Path != agentDir {
			return nil
		}
		once.Do(func() {
			crash(t, mem)
			ffs.Fail(vfs.OpAny, "", vfs.ErrIO) // the dead machine writes nothing more
			close(crashed)
		})
		return vfs.ErrIO
	})
	result := make(chan api.MoveResult, 1)
	go func() {
		res, err := a.Move(context.Background(), id, api.MoveRequest{To: string(b.ID())}, nil)
		if err != nil {
			t.Errorf("move: %v", err)
		}
		result <- res
	}()
	select {
	case <-crashed:
	case res := <-result:
		t.Fatalf("the move ended without a promotion on the target: %+v", res)
	case <-time.After(20 * time.Second):
		t.Fatal("the target never promoted")
	}
	addr := b.Addr()
	b.Close(context.Background())
	ffs.OnOp(nil)
	ffs.Clear()

	b2 := newNodeAt(t, b.cfg.Dir, addr, nodeOpts{fsys: mem})
	cl.nodes[1] = b2
	select {
	case res := <-result:
		if res.Outcome != api.OutcomeCommitted {
			t.Fatalf("move past the point of no return: %+v, want committed", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the move never ended after the target restarted")
	}
	waitSteps(t, b2, id, 3)
	st, err := b2.Agent(t.Context(), id)
	if err != nil || st.Epoch != 2 {
		t.Fatalf("after power loss: %+v, %v; want holder at epoch 2", st, err)
	}
	cl.checkHolder(b2, id)
	if _, err := b2.StopAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	ag, _ := b2.getTenant(id)
	if probs := verifyCapsule(mem, ag.capsule()); len(probs) > 0 {
		t.Errorf("target capsule: %v", probs)
	}
}
