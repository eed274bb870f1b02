package e2e

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// landing is where in a move a fault began, as the test saw the move.
type landing string

const (
	landPrecopy  landing = "precopy"  // before the agent froze
	landWindow   landing = "window"   // frozen, offer or prepare sent, activate not yet
	landActivate landing = "activate" // activate sent, the move not finished
	landResolve  landing = "resolve"  // the move waits for its resolution
	landAfter    landing = "after"    // the move had ended
)

// inside reports whether a fault that began there hit the move itself.
func (l landing) inside() bool { return l != landAfter }

// wanted is the landing a fault aimed at a should have.
func (a aim) wanted() landing {
	switch a {
	case aimPrecopy:
		return landPrecopy
	case aimWindow:
		return landWindow
	case aimActivate:
		return landActivate
	}
	return ""
}

// tracker follows one move through the source's progress stream: it opens
// the gate of each aim when the move reaches it, and tells in which phase
// a moment fell. A phase counts from the moment the test received its
// progress line: the node reports a phase just before it sends the
// phase's request.
type tracker struct {
	mu      sync.Mutex
	began   time.Time
	seen    []phaseAt
	ended   time.Time
	outcome string
	gates   map[aim]chan struct{}
}

type phaseAt struct {
	phase string
	at    time.Time
}

func newTracker() *tracker {
	tr := &tracker{gates: map[aim]chan struct{}{}}
	for _, a := range append([]aim{aimAny}, aims...) {
		tr.gates[a] = make(chan struct{})
	}
	return tr
}

// reached returns a channel closed once the move reaches a's moment, or
// once the move ended without reaching it.
func (tr *tracker) reached(a aim) <-chan struct{} { return tr.gates[a] }

func (tr *tracker) open(a aim) {
	select {
	case <-tr.gates[a]:
	default:
		close(tr.gates[a])
	}
}

// begin marks the move request sent.
func (tr *tracker) begin() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.began = time.Now()
	tr.open(aimAny)
}

// saw records a progress line of the move.
func (tr *tracker) saw(phase string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seen = append(tr.seen, phaseAt{phase, time.Now()})
	tr.open(aimPrecopy) // pre-copy, or later if its line was missed
	switch phase {
	case api.PhaseOffer, api.PhasePrepare:
		tr.open(aimWindow)
	case api.PhaseActivate:
		tr.open(aimWindow)
		tr.open(aimActivate)
	}
}

// end marks the move request answered with outcome ("" when it failed);
// faults aimed at a phase the move never reached start now.
func (tr *tracker) end(outcome string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.ended, tr.outcome = time.Now(), outcome
	for a := range tr.gates {
		tr.open(a)
	}
}

// took is how long the move request ran.
func (tr *tracker) took() time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ended.Sub(tr.began)
}

// where tells in which phase of the move the moment t fell.
func (tr *tracker) where(t time.Time) landing {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.ended.IsZero() && !t.Before(tr.ended) {
		if tr.outcome == api.OutcomeWaiting {
			return landResolve
		}
		return landAfter
	}
	last := api.PhasePrecopy
	for _, p := range tr.seen {
		if p.at.After(t) {
			break
		}
		last = p.phase
	}
	switch last {
	case api.PhasePrecopy:
		return landPrecopy
	case api.PhaseFreeze, api.PhaseOffer, api.PhaseTransfer, api.PhasePrepare:
		return landWindow
	case api.PhaseActivate:
		return landActivate
	case api.PhaseResolve:
		return landResolve
	}
	return landAfter
}

// phases renders the phases seen, with their times after the request.
func (tr *tracker) phases() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var parts []string
	for _, p := range tr.seen {
		parts = append(parts, fmt.Sprintf("%s@%dms", p.phase, p.at.Sub(tr.began).Milliseconds()))
	}
	return strings.Join(parts, " ")
}

// coverage counts, per aim, the faults drawn and where they began.
type coverage struct {
	drawn  map[aim]int
	landed map[aim]map[landing]int
	kinds  map[faultKind][2]int // inside the move / drawn
}

func newCoverage() *coverage {
	return &coverage{drawn: map[aim]int{}, landed: map[aim]map[landing]int{}, kinds: map[faultKind][2]int{}}
}

func (cv *coverage) add(f fault, l landing) {
	cv.drawn[f.Aim]++
	if cv.landed[f.Aim] == nil {
		cv.landed[f.Aim] = map[landing]int{}
	}
	cv.landed[f.Aim][l]++
	k := cv.kinds[f.Kind]
	k[1]++
	if l.inside() {
		k[0]++
	}
	cv.kinds[f.Kind] = k
}

// hits is the number of faults aimed at a that began where they aimed.
func (cv *coverage) hits(a aim) int { return cv.landed[a][a.wanted()] }

// inside counts the faults of the given aims that began inside the move,
// and all of them.
func (cv *coverage) inside(as ...aim) (in, all int) {
	for _, a := range as {
		for l, n := range cv.landed[a] {
			all += n
			if l.inside() {
				in += n
			}
		}
	}
	return in, all
}

func (cv *coverage) String() string {
	var b strings.Builder
	for _, a := range append(append([]aim{}, aims...), aimAny) {
		if cv.drawn[a] == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n  aimed at %-8s %2d:", a, cv.drawn[a])
		for _, l := range []landing{landPrecopy, landWindow, landActivate, landResolve, landAfter} {
			if n := cv.landed[a][l]; n > 0 {
				fmt.Fprintf(&b, " %s %d", l, n)
			}
		}
	}
	var kinds []string
	for _, k := range faultKinds {
		if n, ok := cv.kinds[k]; ok {
			kinds = append(kinds, fmt.Sprintf("%s %d/%d", k, n[0], n[1]))
		}
	}
	fmt.Fprintf(&b, "\n  by kind (inside the move / drawn): %s", strings.Join(kinds, ", "))
	return b.String()
}
