package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentcapsule/capsule/api"
)

// TestDemo runs the README's main command end to end on loopback, and
// checks that it says what it simulates and reports each phase on its own.
func TestDemo(t *testing.T) {
	var lines []string
	res, err := runDemo(t.Context(), t.TempDir(), func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Move.Outcome != api.OutcomeCommitted || res.Move.FrozenMS <= 0 {
		t.Errorf("move = %+v", res.Move)
	}
	if !res.Report.OK() || len(res.Report.Epochs) != 2 || len(res.Report.EventsByMachine) != 2 {
		t.Errorf("report = %+v", res.Report)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"simulated: no model is called", "not sent", "Frozen window:", "(agent frozen)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo does not say %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"for model", "ollama request", " bytes sent"} {
		if strings.Contains(text, bad) {
			t.Errorf("the demo says %q, which reads as something it does not do:\n%s", bad, text)
		}
	}
	var sum int64
	for _, p := range res.Phases {
		sum += p.Bytes
	}
	if len(res.Phases) < 3 || sum != res.Move.BytesSent {
		t.Errorf("phases %+v sum to %d bytes, the move sent %d", res.Phases, sum, res.Move.BytesSent)
	}
}

// TestPhaseClock: progress events carry running totals of the phase the
// move is in; each phase gets what was sent between its start and the next.
func TestPhaseClock(t *testing.T) {
	var c phaseClock
	for _, p := range []api.MoveProgress{
		{Phase: api.PhasePrecopy},
		{Phase: api.PhasePrecopy, BytesSent: 100, BlobsSent: 2},
		{Phase: api.PhaseFreeze, BytesSent: 300, BlobsSent: 3},
		{Phase: api.PhasePrepare, BytesSent: 350, BlobsSent: 4, BlobsSkipped: 1},
		{Phase: api.PhaseDone, BytesSent: 360, BlobsSent: 4, BlobsSkipped: 1},
	} {
		c.observe(p)
	}
	want := []demoPhase{
		{Phase: api.PhasePrecopy, Bytes: 300, BlobsSent: 3},
		{Phase: api.PhaseFreeze, Bytes: 50, BlobsSent: 1, BlobsSkipped: 1},
		{Phase: api.PhasePrepare, Bytes: 10},
	}
	if diff := cmp.Diff(want, c.end(), cmpopts.IgnoreFields(demoPhase{}, "MS")); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
}
