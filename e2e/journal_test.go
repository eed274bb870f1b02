package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/google/go-cmp/cmp"
)

// journalCopy is one copy of the agent's journal found on one node's disk.
type journalCopy struct {
	node   string // the node's short name
	path   string
	events []journal.Event
}

// journalPaths lists every file under a node's data folder that holds a
// copy of the agent's journal: the live capsule's, the journal copy a
// retired or target node keeps (incoming.jsonl), and staged capsules'.
func journalPaths(dataDir, agent string) []string {
	adir := filepath.Join(dataDir, "agents", agent)
	paths := []string{
		filepath.Join(adir, "capsule", filepath.FromSlash(manifest.JournalPath)),
		filepath.Join(adir, "incoming.jsonl"),
	}
	staged, _ := filepath.Glob(filepath.Join(adir, "staging", "*", "capsule", filepath.FromSlash(manifest.JournalPath)))
	return append(paths, staged...)
}

// readJournalFile decodes the complete lines of a journal file (a torn
// last line, cut by a kill mid-append, is left out). A missing file is
// no copy (nil, nil).
func readJournalFile(path string) ([]journal.Event, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	events, err := journal.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// collectJournals reads every copy of the agent's journal on the nodes.
func collectJournals(nodes map[string]string, agent string) ([]journalCopy, error) {
	var out []journalCopy
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, path := range journalPaths(nodes[name], agent) {
			events, err := readJournalFile(path)
			if err != nil {
				return nil, err
			}
			if events != nil {
				out = append(out, journalCopy{node: name, path: path, events: events})
			}
		}
	}
	return out, nil
}

// journalReport is what checkJournals found.
type journalReport struct {
	Problems []string
	Events   int                 // distinct events in the union of all copies
	Writers  map[uint64][]string // epoch -> machines that wrote under it
}

// checkJournals checks the invariant "at most one machine runs the agent,
// ever" as the journals show it: every copy verifies on its own; all copies
// merge by set union without a fork (two events at one machine and seq);
// no two machines wrote under the same epoch; and no machine wrote under an
// epoch lower than one it had written under before.
func checkJournals(copies []journalCopy) journalReport {
	rep := journalReport{Writers: map[uint64][]string{}}
	var merged []journal.Event
	mergeOK := true
	for _, c := range copies {
		for _, p := range journal.Verify(c.events) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s %s: %s", c.node, c.path, p))
		}
		if !mergeOK {
			continue
		}
		m, err := journal.Merge(merged, c.events)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("merging %s %s: %v", c.node, c.path, err))
			mergeOK = false
			continue
		}
		merged = m
	}
	union := unionByID(copies)
	rep.Events = len(union)
	rep.Problems = append(rep.Problems, writerProblems(union, rep.Writers)...)
	rep.Problems = append(rep.Problems, epochOrderProblems(union)...)
	return rep
}

// unionByID returns the distinct events of all copies.
func unionByID(copies []journalCopy) []journal.Event {
	seen := map[string]bool{}
	var out []journal.Event
	for _, c := range copies {
		for _, e := range c.events {
			if !seen[e.ID] {
				seen[e.ID] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// writerProblems fills writers (epoch -> machines) and reports every epoch
// more than one machine wrote under.
func writerProblems(events []journal.Event, writers map[uint64][]string) []string {
	count := map[uint64]map[string]int{}
	for _, e := range events {
		if count[e.Epoch] == nil {
			count[e.Epoch] = map[string]int{}
		}
		count[e.Epoch][e.Machine]++
	}
	var probs []string
	for epoch, machines := range count {
		for m := range machines {
			writers[epoch] = append(writers[epoch], m)
		}
		sort.Strings(writers[epoch])
		if len(machines) > 1 {
			var parts []string
			for _, m := range writers[epoch] {
				parts = append(parts, fmt.Sprintf("%s (%d events)", m, machines[m]))
			}
			probs = append(probs, fmt.Sprintf("epoch %d written by %d machines: %s", epoch, len(machines), strings.Join(parts, ", ")))
		}
	}
	sort.Strings(probs)
	return probs
}

// epochOrderProblems reports a machine whose events, in seq order, go
// back to a lower epoch: a fenced-off holder that kept writing.
func epochOrderProblems(events []journal.Event) []string {
	byMachine := map[string][]journal.Event{}
	for _, e := range events {
		byMachine[e.Machine] = append(byMachine[e.Machine], e)
	}
	var probs []string
	for m, es := range byMachine {
		slices.SortFunc(es, func(a, b journal.Event) int { return int(a.Seq) - int(b.Seq) })
		for i := 1; i < len(es); i++ {
			if es[i].Epoch < es[i-1].Epoch {
				probs = append(probs, fmt.Sprintf("machine %s wrote seq %d under epoch %d after seq %d under epoch %d", m, es[i].Seq, es[i].Epoch, es[i-1].Seq, es[i-1].Epoch))
				break
			}
		}
	}
	sort.Strings(probs)
	return probs
}

// history builds journals for the checker's own tests: each step appends
// one event by a machine under an epoch, with every writer having seen
// everything before (one shared history).
type history struct {
	t      *testing.T
	events []journal.Event
}

func newHistory(t *testing.T) *history { return &history{t: t} }

func (h *history) add(machine string, epoch uint64) journal.Event {
	w := journal.NewWriter(machine, h.events...)
	e, err := w.Next(journal.KindResumed, epoch, "", journal.Resumed{Reason: "test"})
	if err != nil {
		h.t.Fatal(err)
	}
	h.events = append(h.events, e)
	return e
}

func (h *history) copy() []journal.Event { return slices.Clone(h.events) }

// TestCheckJournals shows the checker passes a legal history of moves and
// catches each violation it exists to catch.
func TestCheckJournals(t *testing.T) {
	legal := newHistory(t)
	legal.add("nA", 1)
	legal.add("nA", 1)
	early := legal.copy() // a node that kept an older copy
	legal.add("nB", 2)
	legal.add("nA", 3) // moved back
	legal.add("nA", 3)

	twoWriters := newHistory(t)
	twoWriters.add("nA", 1)
	twoWriters.add("nB", 2)
	twoWriters.add("nA", 2) // a zombie writing under the new holder's epoch

	goingBack := newHistory(t)
	goingBack.add("nA", 2)
	goingBack.add("nB", 3)
	// nA writes under epoch 1 after epoch 2: the writer refuses, so forge it.
	stale := goingBack.copy()
	zombie := journal.NewWriter("nA", stale...)
	forged, err := zombie.Next(journal.KindResumed, 2, "", journal.Resumed{Reason: "before"})
	if err != nil {
		t.Fatal(err)
	}
	forged.Epoch = 1
	if err := journal.Seal(&forged); err != nil {
		t.Fatal(err)
	}

	fork := newHistory(t)
	fork.add("nA", 1)
	left := fork.copy()
	right := fork.copy()
	ea, err := journal.NewWriter("nA", left...).Next(journal.KindResumed, 1, "", journal.Resumed{Reason: "left"})
	if err != nil {
		t.Fatal(err)
	}
	ec, err := journal.NewWriter("nA", right...).Next(journal.KindResumed, 1, "", journal.Resumed{Reason: "right"}) // seq 2 again
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		copies [][]journal.Event
		want   []string // substrings, one per problem expected
	}{
		{"legal moves and an old copy", [][]journal.Event{legal.copy(), early}, nil},
		{"two machines under one epoch", [][]journal.Event{twoWriters.copy()}, []string{"epoch 2 written by 2 machines"}},
		{"a machine going back to an older epoch", [][]journal.Event{append(stale, forged)}, []string{"under epoch 1 after"}},
		{"a fork between two copies", [][]journal.Event{append(left, ea), append(right, ec)}, []string{"fork"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var copies []journalCopy
			for i, c := range tt.copies {
				copies = append(copies, journalCopy{node: fmt.Sprintf("n%d", i+1), path: "j", events: c})
			}
			rep := checkJournals(copies)
			var got []string
			for _, w := range tt.want {
				for _, p := range rep.Problems {
					if strings.Contains(p, w) {
						got = append(got, w)
						break
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems found (-want +got):\n%s\nall problems: %q", diff, rep.Problems)
			}
			if len(tt.want) == 0 && len(rep.Problems) > 0 {
				t.Errorf("a legal history has problems: %q", rep.Problems)
			}
		})
	}
}
