package main

import (
	"time"

	"github.com/agentcapsule/capsule/api"
)

// demoPhase is one phase of the move as the CLI saw it: how long it ran
// and what was sent during it (not the running totals the progress events
// carry).
type demoPhase struct {
	Phase        string `json:"phase"`
	MS           int64  `json:"ms"`
	Bytes        int64  `json:"bytes"`
	BlobsSent    int    `json:"blobs_sent"`
	BlobsSkipped int    `json:"blobs_skipped"`
}

// phaseClock turns the move's progress events into per-phase figures. An
// event names the phase the move is in and the totals sent so far, so a
// phase's figures are the totals when the next phase begins minus those
// when it began, and its time runs between the two events' arrivals.
type phaseClock struct {
	phases []demoPhase
	start  time.Time
	began  time.Time        // when the move was asked for (start)
	at     api.MoveProgress // the totals when the current phase began
	last   api.MoveProgress // the latest totals
}

// startClock returns a phase clock for a move asked for now.
func startClock() *phaseClock { return &phaseClock{began: time.Now()} }

func (c *phaseClock) observe(p api.MoveProgress) {
	now := time.Now()
	if len(c.phases) == 0 && p.Phase != api.PhasePrecopy && p.BytesSent > 0 {
		// Pre-copy ended before the first report reached us (a loaded
		// machine): its bytes are the totals so far, its time since Move.
		c.phases = append(c.phases, demoPhase{Phase: api.PhasePrecopy})
		c.start = c.began
	}
	c.last = p
	if len(c.phases) == 0 || c.phases[len(c.phases)-1].Phase != p.Phase {
		c.close(now)
		c.phases = append(c.phases, demoPhase{Phase: p.Phase})
		c.start, c.at = now, p
	}
}

// close fills in the current phase's figures at time now.
func (c *phaseClock) close(now time.Time) {
	if len(c.phases) == 0 {
		return
	}
	ph := &c.phases[len(c.phases)-1]
	ph.MS = now.Sub(c.start).Milliseconds()
	ph.Bytes = c.last.BytesSent - c.at.BytesSent
	ph.BlobsSent = c.last.BlobsSent - c.at.BlobsSent
	ph.BlobsSkipped = c.last.BlobsSkipped - c.at.BlobsSkipped
}

// end closes the last phase and returns them all, without the final
// "done" marker.
func (c *phaseClock) end() []demoPhase {
	c.close(time.Now())
	out := c.phases
	if n := len(out); n > 0 && out[n-1].Phase == api.PhaseDone {
		out = out[:n-1]
	}
	if out == nil {
		out = []demoPhase{}
	}
	return out
}

func printPhases(say func(string, ...any), phases []demoPhase) {
	say("  %-9s %8s %10s %6s %8s", "phase", "time", "sent", "blobs", "skipped")
	for _, p := range phases {
		frozen := ""
		if p.Phase != api.PhasePrecopy {
			frozen = "  (agent frozen)"
		}
		say("  %-9s %5d ms %10s %6d %8d%s", p.Phase, p.MS, humanBytes(p.Bytes), p.BlobsSent, p.BlobsSkipped, frozen)
	}
	say("  (phase times run between the progress lines as this command received them, so the last phase includes the reply and the report; the frozen window below is what the nodes measured)")
}

func modelName(m *api.ModelRef) string {
	if m == nil {
		return "the agent's model"
	}
	return m.Provider + "/" + m.Model
}
