package main

import (
	"testing"

	"github.com/agentcapsule/capsule/api"
)

// TestDemo runs the README's main command end to end on loopback.
func TestDemo(t *testing.T) {
	var lines []string
	res, err := runDemo(t.Context(), t.TempDir(), func(f string, a ...any) { lines = append(lines, f) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Move.Outcome != api.OutcomeCommitted || res.Move.FrozenMS <= 0 {
		t.Errorf("move = %+v", res.Move)
	}
	if !res.Report.OK() || len(res.Report.Epochs) != 2 || len(res.Report.EventsByMachine) != 2 {
		t.Errorf("report = %+v", res.Report)
	}
	if len(lines) < 8 {
		t.Errorf("the demo told %d lines, want its story", len(lines))
	}
}
