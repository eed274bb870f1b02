package ui

import (
	"bytes"
	"net/http"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// The moves page: the agent's past moves, read from its journal, with the
// frozen window of each (from the source's frozen event to the first
// event of the new holder's epoch) as a table and a bar chart (inline
// SVG, no script). The journal is read a page at a time from the end,
// parsing only the lines of the three kinds that matter.

// pastMove is one move the journal records.
type pastMove struct {
	From, To string
	Epoch    uint64
	Frozen   string // the frozen event's time
	WindowMS float64
	// Bar is the chart's bar: its height and top, in the chart's units.
	BarH, BarY float64
	BarX       int
}

// moveKinds mark the journal lines the moves page parses.
var moveKinds = [][]byte{[]byte(`"kind":"frozen"`), []byte(`"kind":"moved"`), []byte(`"kind":"epoch"`)}

func (s *Server) moves(w http.ResponseWriter, r *http.Request, x session) {
	id := r.PathValue("id")
	v := view{Title: "Moves of " + id, CSRF: x.csrf}
	st, err := s.cfg.Service.Agent(r.Context(), id)
	if err == nil {
		v.Agent = &st
		v.Moves, err = s.pastMoves(r, id)
	}
	if err != nil {
		v.Error = err.Error()
		s.pages.render(w, statusOf(err), "refused", v)
		return
	}
	s.pages.render(w, http.StatusOK, "moves", v)
}

// pastMoves reads the journal's frozen, moved and epoch events, oldest
// first, and pairs them into moves.
func (s *Server) pastMoves(r *http.Request, id string) ([]pastMove, error) {
	var evs []journal.Event
	before := 0
	for {
		page, err := s.cfg.Service.Events(r.Context(), id, api.EventsQuery{Before: before, Limit: api.MaxEventPage})
		if err != nil {
			return nil, err
		}
		var got []journal.Event
		for _, raw := range page.Events {
			if !containsAny(raw, moveKinds) {
				continue
			}
			if e, err := journal.ParseLine(raw); err == nil {
				got = append(got, e)
			}
		}
		evs = append(got, evs...)
		if page.Start == 0 {
			return pairMoves(evs), nil
		}
		before = page.Start
	}
}

func containsAny(b []byte, subs [][]byte) bool {
	for _, s := range subs {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
}

// pairMoves makes a move of each moved event: its frozen window runs from
// the last frozen event before it to the epoch event of its epoch (or the
// moved event itself when there is none).
func pairMoves(evs []journal.Event) []pastMove {
	var out []pastMove
	var frozen *journal.Event
	for i, e := range evs {
		switch e.Kind {
		case journal.KindFrozen:
			frozen = &evs[i]
		case journal.KindMoved:
			var b journal.Moved
			if into(e, &b, func() {}) != nil {
				continue
			}
			m := pastMove{From: b.From, To: b.To, Epoch: b.Epoch}
			end := e.Time
			for _, f := range evs[i:] {
				var eb journal.EpochStart
				if f.Kind == journal.KindEpoch && into(f, &eb, func() {}) == nil && eb.Epoch == b.Epoch {
					end = f.Time
					break
				}
			}
			if frozen != nil {
				m.Frozen, m.WindowMS = frozen.Time, millisBetween(frozen.Time, end)
			}
			out = append(out, m)
			frozen = nil
		}
	}
	return chart(out)
}

func millisBetween(from, to string) float64 {
	a, err1 := time.Parse(time.RFC3339Nano, from)
	b, err2 := time.Parse(time.RFC3339Nano, to)
	if err1 != nil || err2 != nil {
		return 0
	}
	return float64(b.Sub(a).Microseconds()) / 1000
}

// chartHeight is the height of the bars' area in the chart's units.
const chartHeight = 100

// chart sizes each move's bar against the longest window.
func chart(ms []pastMove) []pastMove {
	top := 0.0
	for _, m := range ms {
		top = max(top, m.WindowMS)
	}
	for i := range ms {
		if top > 0 {
			ms[i].BarH = ms[i].WindowMS / top * chartHeight
		}
		ms[i].BarY, ms[i].BarX = chartHeight-ms[i].BarH, 10+i*30
	}
	return ms
}
