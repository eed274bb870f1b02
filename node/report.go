package node

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/vfs"
)

// AgentReport is an offline check of an agent's capsule on this node: the
// capsule verification, the journal's chains, and the built-in runner's
// bookkeeping (its counter against the results it journaled).
type AgentReport struct {
	Agent           string         `json:"agent"`
	Capsule         string         `json:"capsule"` // the capsule folder
	Problems        []string       `json:"problems"`
	Events          int            `json:"events"`
	EventsByMachine map[string]int `json:"events_by_machine"`
	Epochs          []uint64       `json:"epochs"` // distinct epochs in journal order
	Counter         uint64         `json:"counter"`
	CounterResults  int            `json:"counter_results"`
	StepLogTail     []string       `json:"step_log_tail"`
}

// OK reports whether the capsule verified and the counter matches the
// journal (no step lost, none run twice).
func (r AgentReport) OK() bool {
	return len(r.Problems) == 0 && r.Counter == uint64(r.CounterResults)
}

// Report checks agent id's capsule as committed on this node. Stop the
// agent first for a report of a quiet capsule; a running agent's journal
// may hold events past the last commit (they are checked by chain).
func (n *Node) Report(id string, tail int) (AgentReport, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return AgentReport{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stepMu.Lock()
	defer a.stepMu.Unlock()
	r := AgentReport{Agent: id, Capsule: a.capsule(), EventsByMachine: map[string]int{}}
	r.Problems = verifyCapsule(n.fsys, a.capsule())
	events, _, err := agentlog.Read(n.fsys, filepath.Join(a.capsule(), journalInCap))
	if err != nil {
		return r, err
	}
	for _, p := range journal.Verify(events) {
		r.Problems = append(r.Problems, "journal: "+p.String())
	}
	r.Events = len(events)
	for _, e := range events {
		r.EventsByMachine[e.Machine]++
		if len(r.Epochs) == 0 || r.Epochs[len(r.Epochs)-1] != e.Epoch {
			r.Epochs = append(r.Epochs, e.Epoch)
		}
		if e.Kind == journal.KindToolResult && bytes.Contains(e.Body, []byte(CounterTool)) {
			r.CounterResults++
		}
	}
	if r.Counter, err = readCounter(n.fsys, filepath.Join(a.work(), CounterFile)); err != nil {
		return r, fmt.Errorf("report: %w", err)
	}
	r.StepLogTail = tailLines(n.fsys, filepath.Join(a.work(), StepLogFile), tail)
	return r, nil
}

func tailLines(fsys vfs.FS, path string, k int) []string {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > k {
		lines = lines[len(lines)-k:]
	}
	return lines
}
