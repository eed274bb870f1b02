package node

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/render/wire"
)

// What the runner is doing, for status.
const (
	activityWorking = "working" // taking steps
	activityIdle    = "idle"    // waiting for a user message
	activityBlocked = "blocked" // waiting for an operator: Reason says why
	activityWaiting = "waiting" // a call waits for approval (node/effect.go)
)

// runLoop is one run of an agent's runner: the goroutine's controls and
// what status shows of it.
type runLoop struct {
	done chan struct{} // closed when the loop has returned
	wake chan struct{} // poked when something the loop waits for arrived

	mu       sync.Mutex
	halt     bool               // a halt is requested
	exited   bool               // the loop saw the halt and returns
	phase    agent.Phase        // what the step in flight does
	cancel   context.CancelFunc // cancels the step in flight
	activity string
	reason   string

	cancelled atomic.Int64 // model calls a halt cancelled
	model     atomic.Pointer[api.ModelRef]
	sandbox   atomic.Pointer[string] // where its tools' processes run, once they are open

	// Owned by the loop goroutine (and stopRunnerLocked once it returned).
	view        journalView
	tools       agent.Toolbox
	toolsCloser io.Closer
	secretNames []string                       // the environment spec's secret names, read once per run
	render      wire.Incremental               // the agent's renders, reusing the previous step's work
	described   atomic.Pointer[describedTools] // tools as described for effects (node/effect.go)
}

func newRunLoop() *runLoop {
	return &runLoop{done: make(chan struct{}), wake: make(chan struct{}, 1), activity: activityWorking}
}

// poke wakes the loop if it waits.
func (rl *runLoop) poke() {
	select {
	case rl.wake <- struct{}{}:
	default:
	}
}

// requestHalt asks the loop to return at the next step boundary and
// cancels a model call in flight (a tool is left to finish).
func (rl *runLoop) requestHalt() {
	rl.mu.Lock()
	rl.halt = true
	if rl.phase == agent.PhaseModel && rl.cancel != nil {
		rl.cancel()
		rl.cancelled.Add(1)
	}
	rl.mu.Unlock()
	rl.poke()
}

// retractHalt withdraws a halt the loop has not acted on yet; it reports
// false when the loop is already returning.
func (rl *runLoop) retractHalt() bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.exited {
		return false
	}
	rl.halt = false
	return true
}

// halting reports whether a halt is requested.
func (rl *runLoop) halting() bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.halt
}

// shouldExit reports, once and for good, whether the loop must return.
func (rl *runLoop) shouldExit() bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.halt {
		rl.exited = true
	}
	return rl.exited
}

// pause waits before the next step: wait > 0 for that long or a poke, 0
// not at all, < 0 for a poke only. It reports whether to go on.
func (rl *runLoop) pause(c Clock, wait time.Duration) bool {
	if rl.shouldExit() {
		return false
	}
	switch {
	case wait > 0:
		select {
		case <-rl.wake:
		case <-c.After(wait):
		}
	case wait < 0:
		<-rl.wake
	}
	return !rl.shouldExit()
}

func (rl *runLoop) setCancel(f context.CancelFunc) {
	rl.mu.Lock()
	rl.cancel = f
	rl.mu.Unlock()
}

// enter sets the phase of the step in flight and returns the one before.
func (rl *runLoop) enter(p agent.Phase) agent.Phase {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	was := rl.phase
	rl.phase = p
	return was
}

// inPhase reports whether the step in flight is in phase p.
func (rl *runLoop) inPhase(p agent.Phase) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.phase == p
}

// setActivity records what the loop does and reports whether it changed.
func (rl *runLoop) setActivity(activity, reason string) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	changed := rl.activity != activity || rl.reason != reason
	rl.activity, rl.reason = activity, reason
	return changed
}

// setActivity records the loop's activity and shows a change to watchers.
func (a *tenant) setActivity(rl *runLoop, activity, reason string) {
	if !rl.setActivity(activity, reason) {
		return
	}
	state := map[string]string{activityWorking: api.StateRunning, activityIdle: api.WatchIdle, activityBlocked: api.StateBlocked, activityWaiting: api.WatchWaiting}[activity]
	a.publishState(state, reason)
}

// status returns the activity and its reason.
func (rl *runLoop) status() (string, string) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.activity, rl.reason
}

// lockStepWithin takes a.stepMu, waiting at most d for the step in flight
// (a tool) to end; it reports whether it took it.
//
// While it waits the runner yields at its next step boundary (stepWanted),
// so a pre-copy round gets in between two tool steps instead of waiting
// for a whole tool loop.
func (a *tenant) lockStepWithin(d time.Duration) bool {
	if a.stepMu.TryLock() {
		return true
	}
	a.stepWanted.Add(1)
	defer a.stepWanted.Add(-1)
	deadline := a.n.clock.After(d)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline:
			return a.stepMu.TryLock()
		case <-tick.C:
			if a.stepMu.TryLock() {
				return true
			}
		}
	}
}

// yieldStep lets a waiting lockStepWithin take stepMu before the runner's
// next step (it waits at most a little longer than the waiter's bound).
func (a *tenant) yieldStep(rl *runLoop) {
	for i := 0; a.stepWanted.Load() > 0 && !rl.halting() && i < 60000; i++ {
		time.Sleep(time.Millisecond)
	}
}
