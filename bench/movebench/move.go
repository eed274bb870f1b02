package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// measured is one move as the bench saw it.
type measured struct {
	Result      api.MoveResult
	Seconds     float64 // request to result, as the client saw it
	Wire        int64   // bytes through the proxy both ways during the move
	FrozenBytes int64   // payload bytes sent after the freeze began
	marks       []mark  // phase changes reported by the progress stream
	start, end  time.Time
}

type mark struct {
	phase string
	at    time.Duration
}

// move moves the agent from p to the other node through the local API (the
// request `capsule move` makes), calling onPrecopy once, when the progress
// stream first reports pre-copy (the first inventory is taken by then).
func (pr *pair) move(p *proc, agent string, onPrecopy func()) (measured, error) {
	px := pr.proxy(p)
	before := px.Stats()
	var m measured
	var mu sync.Mutex
	atFreeze := int64(-1)
	start := time.Now()
	res, err := p.client().Move(context.Background(), agent, api.MoveRequest{To: pr.other(p).id}, func(pg api.MoveProgress) {
		mu.Lock()
		defer mu.Unlock()
		if len(m.marks) == 0 || m.marks[len(m.marks)-1].phase != pg.Phase {
			m.marks = append(m.marks, mark{pg.Phase, time.Since(start)})
		}
		if pg.Phase == api.PhasePrecopy && onPrecopy != nil {
			onPrecopy()
			onPrecopy = nil
		}
		if pg.Phase == api.PhaseFreeze && atFreeze < 0 {
			atFreeze = pg.BytesSent
		}
	})
	m.start, m.end = start, time.Now()
	m.Seconds = m.end.Sub(start).Seconds()
	if err != nil {
		return m, fmt.Errorf("move %s -> %s: %w", p.name, pr.other(p).name, err)
	}
	m.Result = res
	if res.Outcome != api.OutcomeCommitted {
		return m, fmt.Errorf("move %s -> %s: %s: %s", p.name, pr.other(p).name, res.Outcome, res.Reason)
	}
	time.Sleep(200 * time.Millisecond) // the proxy counts a chunk once its write returned
	after := px.Stats()
	m.Wire = after.BytesUp - before.BytesUp + after.BytesDown - before.BytesDown
	if atFreeze >= 0 {
		m.FrozenBytes = res.BytesSent - atFreeze
	}
	return m, nil
}

func (m measured) print(label string) {
	r := m.Result
	fmt.Printf("  %-29s %7.2f s   wire %s (payload %s, %d blobs sent, %d of them as deltas, %d skipped), frozen %d ms, %d round trips frozen, %d pre-copy rounds\n",
		label, m.Seconds, human(m.Wire), human(r.BytesSent), r.BlobsSent, r.BlobsDelta, r.BlobsSkipped, r.FrozenMS, r.RoundTripsFrozen, r.PrecopyRounds)
}

// phases renders the time spent in each phase after the first.
func (m measured) phases() string {
	var parts []string
	for i, mk := range m.marks {
		end := time.Duration(m.Seconds * float64(time.Second))
		if i+1 < len(m.marks) {
			end = m.marks[i+1].at
		}
		parts = append(parts, fmt.Sprintf("%s %d ms", mk.phase, (end-mk.at).Milliseconds()))
	}
	return strings.Join(parts, ", ")
}

// journalCopy returns the journal a node keeps of the agent: the capsule's
// while it holds it, else the copy a retired node keeps (incoming.jsonl).
func journalCopy(dataDir, agent string) ([]journal.Event, error) {
	for _, p := range []string{capsuleJournal(dataDir, agent), filepath.Join(dataDir, "agents", agent, "incoming.jsonl")} {
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return journal.Decode(bytes.NewReader(data[:bytes.LastIndexByte(data, '\n')+1]))
	}
	return nil, nil
}

// journalCount is the number of events of the node's copy of the journal.
func journalCount(dataDir, agent string) (int, error) {
	events, err := journalCopy(dataDir, agent)
	return len(events), err
}

// tailBytes is the size of the journal lines the move had to carry: the
// events of the source machine after the first `from` events of the
// target's copy before the move.
func tailBytes(dataDir, agent, source string, from int) (int64, error) {
	events, err := journalCopy(dataDir, agent)
	if err != nil {
		return 0, err
	}
	var n int64
	for i := from; i < len(events); i++ {
		if events[i].Machine == source {
			n += int64(len(journal.Encode(events[i])) + 1)
		}
	}
	return n, nil
}
