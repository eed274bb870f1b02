package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/api"
)

// poll is one node's answer in a scripted poll: state, epoch, steps, the
// process it came from and when (ms after t0) it was asked and answered.
type poll struct {
	state         string
	epoch, steps  uint64
	start         int
	asked, answer int
}

func (p poll) view(t0 time.Time) view {
	if p.state == "" {
		return view{}
	}
	return view{up: true, st: api.AgentStatus{State: p.state, Epoch: p.epoch, Steps: p.steps},
		asked: t0.Add(ms(p.asked)), answered: t0.Add(ms(p.answer)), start: p.start}
}

// TestMonitor feeds scripted polls of two nodes to the monitor and checks
// which signs of two runners it reports.
func TestMonitor(t *testing.T) {
	run, frozen, retired := api.StateRunning, api.StateFrozen, api.StateRetired
	for _, tc := range []struct {
		name  string
		polls [][2]poll
		want  []string // a word of each report, in order
	}{
		{"a move hands over", [][2]poll{
			{{run, 3, 10, 1, 0, 1}, {retired, 2, 0, 1, 0, 1}},
			{{frozen, 3, 12, 1, 50, 51}, {retired, 3, 0, 1, 50, 51}},
			{{retired, 4, 12, 1, 100, 101}, {run, 4, 1, 1, 100, 101}},
			{{retired, 4, 12, 1, 150, 151}, {run, 4, 5, 1, 150, 151}},
		}, nil},
		{"a rollback resumes the old holder", [][2]poll{
			{{frozen, 3, 12, 1, 0, 1}, {retired, 4, 0, 1, 0, 1}},
			{{run, 3, 13, 1, 50, 51}, {retired, 4, 0, 1, 50, 51}},
		}, nil},
		{"two runners under one epoch", [][2]poll{
			{{run, 4, 10, 1, 0, 1}, {run, 4, 3, 1, 0, 1}},
		}, []string{"epoch 4"}},
		{"skew inside one poll is not a report", [][2]poll{
			{{run, 3, 10, 1, 0, 5}, {run, 4, 1, 1, 0, 2}},
		}, nil},
		{"the old holder still runs beside the new one", [][2]poll{
			{{run, 3, 10, 1, 0, 5}, {run, 4, 1, 1, 0, 2}},
			{{run, 3, 11, 1, 50, 51}, {run, 4, 2, 1, 50, 51}},
			{{run, 3, 12, 1, 100, 101}, {run, 4, 3, 1, 100, 101}}, // reported once
		}, []string{"n1 runs the agent at epoch 3"}},
		{"the old holder comes back after a restart", [][2]poll{
			{{retired, 4, 0, 1, 0, 1}, {run, 4, 1, 1, 0, 1}},
			{{run, 3, 0, 2, 500, 501}, {}},
		}, []string{"n1 runs the agent at epoch 3"}},
		{"a runner steps while retired", [][2]poll{
			{{retired, 4, 12, 1, 0, 1}, {run, 4, 1, 1, 0, 1}},
			{{retired, 4, 14, 1, 50, 51}, {run, 4, 3, 1, 50, 51}},
		}, []string{"n1 took 2 steps"}},
		{"a restart resets the steps", [][2]poll{
			{{frozen, 4, 12, 1, 0, 1}, {retired, 3, 0, 1, 0, 1}},
			{{frozen, 4, 14, 2, 50, 51}, {retired, 3, 0, 1, 50, 51}},
		}, nil},
		{"polls far apart leave room for a resume", [][2]poll{
			{{frozen, 4, 12, 1, 0, 1}, {retired, 3, 0, 1, 0, 1}},
			{{frozen, 4, 30, 1, 900, 901}, {retired, 3, 0, 1, 900, 901}},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{procs: []*proc{{name: "n1"}, {name: "n2"}}}
			m := &monitor{ran: map[uint64]sighting{}}
			t0 := time.Now()
			for _, p := range tc.polls {
				m.check(c, []view{p[0].view(t0), p[1].view(t0)})
			}
			got := m.violations()
			if len(got) != len(tc.want) {
				t.Fatalf("reports:\n  %s\nwant %d: %q", strings.Join(got, "\n  "), len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("report %d is %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

// TestTrackerWhere checks in which phase of a move a moment falls.
func TestTrackerWhere(t *testing.T) {
	tr := newTracker()
	tr.begin()
	t0 := tr.began
	tr.seen = []phaseAt{{api.PhasePrecopy, t0.Add(ms(10))}, {api.PhaseFreeze, t0.Add(ms(50))},
		{api.PhaseOffer, t0.Add(ms(52))}, {api.PhasePrepare, t0.Add(ms(60))}, {api.PhaseActivate, t0.Add(ms(80))}}
	tr.ended, tr.outcome = t0.Add(ms(100)), api.OutcomeCommitted
	var got []landing
	for _, at := range []int{1, 20, 51, 70, 85, 100, 200} {
		got = append(got, tr.where(t0.Add(ms(at))))
	}
	want := []landing{landPrecopy, landPrecopy, landWindow, landWindow, landActivate, landAfter, landAfter}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("where (-want +got):\n%s", diff)
	}
	tr.outcome = api.OutcomeWaiting
	if got := tr.where(t0.Add(ms(200))); got != landResolve {
		t.Errorf("after a move that waits: %s, want %s", got, landResolve)
	}
}

// TestTrackerGates checks that each aim's gate opens at its phase, and
// every gate when the move ends.
func TestTrackerGates(t *testing.T) {
	tr := newTracker()
	isOpen := func(a aim) bool {
		select {
		case <-tr.reached(a):
			return true
		default:
			return false
		}
	}
	open := func() []bool {
		return []bool{isOpen(aimAny), isOpen(aimPrecopy), isOpen(aimWindow), isOpen(aimActivate)}
	}
	steps := []struct {
		do   func()
		want []bool
	}{
		{func() {}, []bool{false, false, false, false}},
		{tr.begin, []bool{true, false, false, false}},
		{func() { tr.saw(api.PhasePrecopy) }, []bool{true, true, false, false}},
		{func() { tr.saw(api.PhaseFreeze) }, []bool{true, true, false, false}},
		{func() { tr.saw(api.PhaseOffer) }, []bool{true, true, true, false}},
		{func() { tr.saw(api.PhaseActivate) }, []bool{true, true, true, true}},
	}
	for i, s := range steps {
		s.do()
		if diff := cmp.Diff(s.want, open()); diff != "" {
			t.Errorf("step %d: gates any/precopy/window/activate (-want +got):\n%s", i, diff)
		}
	}
	tr2 := newTracker()
	tr2.begin()
	tr2.end("")
	for _, a := range aims {
		select {
		case <-tr2.reached(a):
		default:
			t.Errorf("gate %s still closed after the move ended", a)
		}
	}
}

// TestPlanRounds checks that a schedule aims at every phase in turn, that
// the same seed gives the same schedule, and that operator starts and lost
// replies go to the activate round trip.
func TestPlanRounds(t *testing.T) {
	plan := planRounds(42, 20)
	if diff := cmp.Diff(plan, planRounds(42, 20)); diff != "" {
		t.Fatalf("the same seed planned two schedules:\n%s", diff)
	}
	var got []aim
	starts, lost := 0, 0
	for _, r := range plan {
		if len(r) > 0 {
			got = append(got, r[0].Aim)
		}
		for _, f := range r {
			switch {
			case f.Aim != aimActivate:
			case f.Kind == faultStart:
				starts++
			case f.Kind == faultLoseReplies:
				lost++
			}
		}
	}
	for i, a := range got {
		if want := aims[i%len(aims)]; a != want {
			t.Fatalf("aimed fault %d aims at %s, want %s (aims in turn: %v)", i, a, want, got)
		}
	}
	if len(got) < 3*len(aims) || starts == 0 || lost == 0 {
		t.Errorf("%d aimed faults, %d operator starts and %d lost replies at activate: want at least %d, one and one", len(got), starts, lost, 3*len(aims))
	}
}

// TestAimProblems checks the verdict on where the faults began.
func TestAimProblems(t *testing.T) {
	hit := newCoverage()
	miss := newCoverage()
	for _, a := range aims {
		hit.add(fault{Kind: faultCut, Aim: a}, a.wanted())
		hit.add(fault{Kind: faultCut, Aim: a}, landAfter)
		miss.add(fault{Kind: faultCut, Aim: a}, landAfter)
	}
	miss.add(fault{Kind: faultCut, Aim: aimActivate}, landActivate)
	if got := aimProblems(hit); len(got) != 1 || !strings.Contains(got[0], "only 3 of 6") {
		t.Errorf("half the aimed faults inside the move: %q, want the share reported", got)
	}
	hit.add(fault{Kind: faultCut, Aim: aimWindow}, landWindow)
	hit.add(fault{Kind: faultCut, Aim: aimWindow}, landActivate)
	if got := aimProblems(hit); len(got) != 0 {
		t.Errorf("5 of 8 inside the move, every phase hit: %q, want none", got)
	}
	got := aimProblems(miss)
	if len(got) != 3 || !strings.Contains(got[0], "precopy") || !strings.Contains(got[1], "window") {
		t.Errorf("two phases missed: %q, want them named and the share reported", got)
	}
}
