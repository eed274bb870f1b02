package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/transfer"
)

// mayRun reports the epoch this node may run the agent at, from its
// durable records alone: a verified holder record and no move keeping it
// frozen (transfer.MayRun).
func (a *tenant) mayRun() (uint64, bool) {
	if a.blocked != nil || a.holder == nil {
		return 0, false
	}
	return transfer.MayRun(a.holder, a.src.machine)
}

// startLocked opens the journal and starts the runner, appending ev (a
// lifecycle event) first. It refuses unless mayRun allows it, and unless
// the compatibility checks pass (compat.go), which journal any tool
// mapping before ev.
func (a *tenant) startLocked(kind journal.Kind, body any) error {
	if a.run != nil {
		return nil
	}
	epoch, ok := a.mayRun()
	if !ok {
		return fmt.Errorf("%w: %s (%s)", ErrNotHeld, a.id, a.why())
	}
	if err := a.openLog(epoch); err != nil {
		return a.refuse(err)
	}
	if err := a.compatGate(epoch); err != nil {
		return err
	}
	if _, err := a.log.Append(kind, epoch, a.n.wallTime(), body); err != nil {
		if errors.Is(err, journal.ErrStaleEpoch) {
			return a.refuse(err)
		}
		return err
	}
	return a.runLocked()
}

// ErrJournalRefused marks an agent the node will not run because its
// journal does not check out: a broken chain, a bad id, an event under an
// epoch above the holder's, a committed prefix that does not match the
// manifest (docs/FORMAT.md §7.7).
var ErrJournalRefused = errors.New("node: journal refused")

// refuse blocks the agent because its journal was refused (err), so that
// status shows why it does not run; `agent start` tries again.
func (a *tenant) refuse(err error) error {
	a.blocked = fmt.Errorf("%w: %w", ErrJournalRefused, err)
	if a.log != nil {
		_ = a.log.Close()
		a.log = nil
	}
	a.n.log.Error("agent blocked: journal refused", "agent", a.id, "err", err)
	return a.blocked
}

// runLocked starts the runner on the open journal, after the lifecycle
// event that says why is durable. It refuses unless mayRun allows it.
func (a *tenant) runLocked() error {
	if a.run != nil {
		return nil
	}
	epoch, ok := a.mayRun()
	if !ok || a.log == nil {
		return fmt.Errorf("%w: %s (%s)", ErrNotHeld, a.id, a.why())
	}
	rl := newRunLoop()
	a.run = rl
	a.n.wg.Add(1)
	go a.loop(rl, epoch)
	a.n.log.Info("agent running", "agent", a.id, "epoch", epoch)
	return nil
}

// openLog opens the journal for appending under epoch, or re-fences the
// open one at epoch. A journal is opened only if its committed prefix
// matches the manifest (openCheckedLog, one streaming pass); one that
// holds an event under an epoch above the holder's is refused.
func (a *tenant) openLog(epoch uint64) error {
	if a.log != nil {
		a.log.Fence(epoch)
		return nil
	}
	l, err := agentlog.OpenChecked(a.n.fsys, a.capsule(), string(a.n.id), epoch)
	if err != nil {
		return err
	}
	if fence := l.Epoch(); fence > epoch {
		_ = l.Close()
		return fmt.Errorf("%w: the journal holds an event under epoch %d, above the holder epoch %d", journal.ErrStaleEpoch, fence, epoch)
	}
	for _, q := range l.Quarantined() {
		a.n.log.Warn("journal: torn last line set aside", "agent", a.id, "file", q.Path, "line", q.Line, "reason", q.Reason)
	}
	l.SetOnAppend(a.publishEvent)
	a.log = l
	return nil
}

// stopLocked stops the runner at a step boundary, journals why, and commits
// the capsule (workspace snapshot, journal summary, holder) so that what is
// on disk is complete. It is a no-op when the runner is not running.
func (a *tenant) stopLocked(reason string) error {
	if stopped, err := a.haltLocked(reason); !stopped || err != nil {
		return err
	}
	return a.commitLocked()
}

// haltLocked stops the runner at a step boundary and journals why (the
// event is durable when it returns). It reports whether the runner was
// running. A tool that runs longer than Config.ToolWait is not cut: the
// runner goes on and haltLocked returns a *ToolRunningError.
func (a *tenant) haltLocked(reason string) (bool, error) {
	if a.run == nil {
		return false, nil
	}
	if err := a.stopRunnerLocked(); err != nil {
		return false, err
	}
	epoch := a.holder.Holder()
	if _, err := a.log.Append(journal.KindFrozen, epoch, a.n.wallTime(), journal.Frozen{Reason: reason}); err != nil {
		return true, err
	}
	a.n.log.Info("agent frozen", "agent", a.id, "epoch", epoch, "reason", reason)
	a.publishState(api.StateStopped, reason)
	return true, nil
}

// ToolRunningError is why a freeze or a stop was refused: a tool still
// runs after Config.ToolWait, and a tool is never cut.
type ToolRunningError struct {
	Agent string
	Wait  time.Duration
}

// Error names the agent and the bound.
func (e *ToolRunningError) Error() string {
	return fmt.Sprintf("node: agent %s: a tool is still running after %s; it is never cut: try again when it has finished", e.Agent, e.Wait)
}

// stopRunnerLocked stops the runner at a step boundary: a model call in
// flight is cancelled (its output was not journaled; a later step makes
// it again), a running tool is waited for up to Config.ToolWait. When the
// wait runs out the runner keeps running and a *ToolRunningError says why.
func (a *tenant) stopRunnerLocked() error {
	rl := a.run
	if rl == nil {
		return nil
	}
	rl.requestHalt()
	if h := a.n.hooks.haltAsked; h != nil {
		h(a.id)
	}
	t := a.n.clock.After(a.n.cfg.ToolWait)
	select {
	case <-rl.done:
	case <-t:
		if !rl.retractHalt() {
			<-rl.done
			break
		}
		return &ToolRunningError{Agent: a.id, Wait: a.n.cfg.ToolWait}
	}
	a.run = nil
	if n := rl.cancelled.Load(); n > 0 {
		a.n.log.Info("model call cancelled by a stop; it is made again when the agent runs", "agent", a.id, "calls", n)
	}
	if rl.tools != nil {
		// The tools close in the background: an MCP server may take up to
		// twice its stop bound to go, and a freeze must not wait for it
		// (the runner has stopped, nothing calls it any more). The node's
		// Close waits for it, so no process outlives the node.
		c := rl.toolsCloser
		a.n.closing.Add(1)
		go func() {
			defer a.n.closing.Done()
			if err := c.Close(); err != nil {
				a.n.log.Warn("closing the agent's tools", "agent", a.id, "err", err)
			}
		}()
	}
	return nil
}

// commitLocked records the workspace into the capsule (blobs first, only
// files changed since the last record are hashed) and commits the manifest
// with this node as holder and the journal summary.
func (a *tenant) commitLocked() error {
	c, err := capsule.Open(a.n.fsys, a.capsule(), capsule.Config{Writer: a.n.writer()})
	if err != nil {
		return fmt.Errorf("commit %s: %w", a.id, err)
	}
	rec, err := a.record()
	if err == nil {
		err = a.storeRecord(c.Blobs(), rec)
	}
	if err != nil {
		return fmt.Errorf("commit %s: %w", a.id, err)
	}
	holder := manifest.Holder{Node: string(a.n.id), Epoch: a.holder.Holder()}
	if err := commitCapsule(c, rec.Snap, holder, a.log.Summary()); err != nil {
		return fmt.Errorf("commit %s: %w", a.id, err)
	}
	return nil
}

// commitHolderLocked commits the holder and the journal summary without
// recording the workspace again (it was just checked out from the capsule).
func (a *tenant) commitHolderLocked() error {
	holder := manifest.Holder{Node: string(a.n.id), Epoch: a.holder.Holder()}
	if err := commitHolder(a.n.fsys, a.capsule(), holder, a.log.Summary(), a.n.writer()); err != nil {
		return fmt.Errorf("commit %s: %w", a.id, err)
	}
	return nil
}

// loop runs the runner until a halt is requested, one step at a time.
// The counter steps every StepInterval; the agent loop takes its next
// step at once, and when it is idle or blocked it waits for wake without
// a timer (an idle agent costs no CPU and no disk writes).
func (a *tenant) loop(rl *runLoop, epoch uint64) {
	defer a.n.wg.Done()
	defer close(rl.done)
	var step uint64
	wait := a.n.cfg.StepInterval
	failures := 0
	for {
		if !rl.pause(a.n.clock, wait) {
			return
		}
		if wait < 0 {
			a.setActivity(rl, activityWorking, "") // woken
		}
		step++
		usedAgent, err := a.step(rl, epoch, step)
		var be *agent.BlockedError
		var we *agent.WaitingError
		switch {
		case err == nil:
			failures = 0
			a.setActivity(rl, activityWorking, "")
			wait = a.n.cfg.StepInterval
			if usedAgent {
				wait = 0
			}
		case errors.Is(err, agent.ErrIdle):
			a.setActivity(rl, activityIdle, "")
			wait = -1
		case errors.As(err, &we):
			a.setActivity(rl, activityWaiting, fmt.Sprintf("call %s (%s) waits for approval", we.CallID, we.Name))
			wait = -1
		case errors.As(err, &be):
			a.setActivity(rl, activityBlocked, be.Reason)
			a.lastErr.Store(be.Error())
			a.n.log.Warn("agent blocked", "agent", a.id, "reason", be.Reason)
			wait = -1
		case errors.Is(err, context.Canceled) && rl.halting():
			// a freeze cancelled a model call: it is made again later
		case errors.Is(err, errHalted):
			wait = 0 // no step was taken; a retracted halt goes straight on
		default:
			a.n.log.Warn("runner step failed", "agent", a.id, "epoch", epoch, "err", err)
			if errors.Is(err, journal.ErrStaleEpoch) {
				return // fenced off: never write under an old epoch
			}
			failures++
			wait = backoff(a.n.cfg.StepInterval, failures)
		}
	}
}

// errHalted is returned by step when a halt was asked for before it
// began: no step is taken.
var errHalted = errors.New("node: runner halted before the step")

// backoff is the pause after n failed steps in a row: doubling from
// base, at most 30s.
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// step takes one step with the configured runner, or, unset, with the
// agent loop when the journal names a language model and the counter
// otherwise. It reports whether the agent loop took it.
func (a *tenant) step(rl *runLoop, epoch, step uint64) (bool, error) {
	a.yieldStep(rl)
	a.stepMu.Lock()
	defer a.stepMu.Unlock()
	if rl.halting() { // asked for while the runner waited for the lock
		return false, errHalted
	}
	ctx, cancel := context.WithCancel(a.n.ctx)
	defer cancel()
	rl.setCancel(cancel)
	defer rl.setCancel(nil)
	runner := a.n.cfg.Runner
	usedAgent := false
	if runner == nil {
		events, err := rl.view.refresh(a.n.fsys, filepath.Join(a.capsule(), journalInCap))
		if err != nil {
			a.lastErr.Store(err.Error())
			return false, err
		}
		if mc, ok, _ := agent.CurrentModel(events); ok {
			rl.model.Store(&api.ModelRef{Provider: mc.Provider, API: mc.API, Model: mc.Model})
		}
		if usesAgent(events) {
			usedAgent = true
			if err := a.openTools(rl); err != nil {
				return true, &agent.BlockedError{Reason: "the workspace tools cannot be opened: " + err.Error(), Err: err}
			}
			err := a.agentStep(ctx, rl, epoch, events)
			if err == nil {
				a.steps.Add(1)
				a.n.m.steps.Inc()
			} else if !errors.Is(err, agent.ErrIdle) && !errors.Is(err, agent.ErrWaiting) {
				a.lastErr.Store(err.Error())
			}
			return true, err
		}
		runner = CounterRunner{}
	}
	env := &StepEnv{Agent: a.id, Node: a.n.id, Epoch: epoch, Step: step, FS: a.n.fsys, Workdir: a.work(), Now: a.n.clock.Now(),
		Append: func(kind journal.Kind, body any) (journal.Event, error) {
			return a.log.Append(kind, epoch, a.n.wallTime(), body)
		}}
	if err := runner.Step(ctx, env); err != nil {
		a.lastErr.Store(err.Error())
		return usedAgent, err
	}
	a.steps.Add(1)
	a.n.m.steps.Inc()
	return usedAgent, nil
}

// openTools opens the agent's tools once per run.
func (a *tenant) openTools(rl *runLoop) error {
	if rl.tools != nil {
		return nil
	}
	open := a.n.cfg.Tools
	if open == nil {
		open = a.openWorkspaceTools
	}
	tb, c, err := open(a.work())
	if err != nil {
		return err
	}
	rl.tools, rl.toolsCloser = tb, c
	var where string
	if spec, err := a.spec(a.capsule()); err == nil {
		where = a.n.sandboxStatus(spec)
	} else {
		where = a.n.sandboxStatus(nil)
	}
	rl.sandbox.Store(&where)
	return nil
}

func (a *tenant) why() string {
	src := a.currentSource()
	switch {
	case a.blocked != nil:
		return a.blocked.Error()
	case a.holder == nil || a.holder.Holder() == 0:
		return "no holder epoch on this node"
	case src != nil && src.Frozen():
		return "frozen by move " + src.State().Move + " (" + src.Phase() + ")"
	}
	return "not running"
}

// wake tells the runner that something it waits for arrived (a user
// event, a model change, an operator start): an idle or blocked agent
// takes its next step now. Caller holds a.mu.
//
// The runner shows as working from here on, before it wakes, so that a
// caller that waits for the agent to be idle again (capsule agent wait)
// never sees the idle state of before its message.
func (a *tenant) wake() {
	if a.run != nil {
		a.setActivity(a.run, activityWorking, "")
		a.run.poke()
	}
}
