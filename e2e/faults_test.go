package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// faultKind names one fault the chaos test injects during a move. Faults
// name roles (the move's source, its target, the third node), not nodes,
// so a seed replays the same schedule whatever the moves' outcomes.
type faultKind string

const (
	faultKillSource faultKind = "kill-source" // SIGKILL the source, restart it after Hold
	faultKillTarget faultKind = "kill-target" // SIGKILL the target, restart it after Hold
	faultKillOther  faultKind = "kill-other"  // SIGKILL the node not in the move
	faultCut        faultKind = "cut"         // reset every source->target connection
	faultPartition  faultKind = "partition"   // refuse and cut both ways for Hold
	faultBlackhole  faultKind = "blackhole"   // source->target bytes vanish for Hold, then a cut
	faultLatency    faultKind = "latency"     // N ms each way for Hold
	faultDrop       faultKind = "drop"        // source->target connections die after N bytes, for Hold
	// faultStart is the operator's `capsule agent start` on the source: a
	// no-op while the agent runs there, refused from the freeze on (the
	// source never runs after activate is sent, docs/PROTOCOL.md §6 R5), so
	// a start that is not refused shows up as a second runner.
	faultStart faultKind = "start-source"
	// faultLoseReplies lets source->target requests through and throws
	// their replies away for Hold, then cuts: aimed at activate, the target
	// activates and the source never hears it (it must resolve, §6 R10).
	faultLoseReplies faultKind = "lose-replies"
)

var faultKinds = []faultKind{faultKillSource, faultKillTarget, faultKillOther, faultCut,
	faultPartition, faultBlackhole, faultLatency, faultDrop, faultStart, faultLoseReplies}

// aim names the moment of a move a fault is scheduled against. The test
// learns the move's phases from the source node's progress stream (the
// local API's move request), so a fault can start in the window it aims at
// rather than at a random time after the round began.
type aim string

const (
	aimPrecopy  aim = "precopy"  // At after the first pre-copy push began, while the agent still runs
	aimWindow   aim = "window"   // At after the offer is sent: between offer and activate
	aimActivate aim = "activate" // At after activate is sent: the point of no return's round trip
	aimAny      aim = "any"      // At after the move request, anywhere in 0-500 ms
)

// aims are the phases every run must hit, in the order rounds aim at them.
var aims = []aim{aimPrecopy, aimWindow, aimActivate}

// fault is one scheduled fault: it starts At after the moment it aims at.
type fault struct {
	Kind faultKind
	Aim  aim
	At   time.Duration
	Hold time.Duration
	N    int64
}

func (f fault) String() string {
	s := fmt.Sprintf("%s at %s+%v", f.Kind, f.Aim, f.At)
	switch f.Kind {
	case faultCut, faultStart:
		return s
	case faultLatency:
		return fmt.Sprintf("%s of %d ms for %v", s, f.N, f.Hold)
	case faultDrop:
		return fmt.Sprintf("%s after %d bytes for %v", s, f.N, f.Hold)
	}
	return fmt.Sprintf("%s for %v", s, f.Hold)
}

// round is the faults of one move.
type round []fault

func (r round) String() string {
	if len(r) == 0 {
		return "no fault"
	}
	parts := make([]string, len(r))
	for i, f := range r {
		parts[i] = f.String()
	}
	return strings.Join(parts, " + ")
}

// planRounds draws the whole fault schedule from the seed. Every round but
// one in ten gets a fault aimed at a phase of the move, the phases taken in
// turn so that each run aims at each of them; two rounds in ten get a
// second fault, at any time.
func planRounds(seed int64, n int) []round {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	out := make([]round, n)
	aimed := 0
	for i := range out {
		x := rng.IntN(10)
		if x == 0 && i >= len(aims) {
			continue // a move without faults (never one of the first rounds)
		}
		a := aims[aimed%len(aims)]
		f := drawFault(rng, a)
		if a == aimActivate {
			// Of the faults aimed at the activate round trip, one in three
			// is an operator's start on the source (the window of issue 18
			// item 1) and one in three loses the activated reply.
			switch aimed / len(aims) % 3 {
			case 0:
				f = fault{Kind: faultStart, Aim: a}
			case 1:
				f = fault{Kind: faultLoseReplies, Aim: a, Hold: ms(100 + rng.IntN(500))}
			}
		}
		out[i] = append(out[i], f)
		aimed++
		if x >= 8 {
			out[i] = append(out[i], drawFault(rng, aimAny))
		}
	}
	return out
}

// drawFault draws a fault aimed at a: its kind, its delay after the aimed
// moment (short for the phases, which last tens of milliseconds) and how
// long it lasts.
func drawFault(rng *rand.Rand, a aim) fault {
	f := fault{Kind: faultKinds[rng.IntN(len(faultKinds))], Aim: a}
	switch a {
	case aimPrecopy:
		f.At = ms(rng.IntN(15))
	case aimWindow:
		f.At = ms(rng.IntN(5))
	case aimActivate:
		f.At = 0
	default:
		f.At = ms(rng.IntN(500))
	}
	switch f.Kind {
	case faultKillSource, faultKillTarget, faultKillOther:
		f.Hold = ms(50 + rng.IntN(550)) // down time
	case faultPartition, faultBlackhole:
		f.Hold = ms(100 + rng.IntN(1400))
	case faultLoseReplies:
		f.Hold = ms(100 + rng.IntN(500))
	case faultLatency:
		f.Hold, f.N = ms(300+rng.IntN(1200)), int64(2+rng.IntN(40))
	case faultDrop:
		f.Hold, f.N = ms(300+rng.IntN(1200)), int64(100)<<rng.IntN(11) // 100 B .. 100 KiB
	}
	return f
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// inject runs the round's faults concurrently, each in its own goroutine
// that waits for the moment the fault aims at (as tr observes the move),
// and returns a function that waits for all of them to be over (killed
// nodes restarted, links healed) and reports where each began.
func (c *cluster) inject(r round, src, tgt int, tr *tracker) (wait func() []landing) {
	var wg sync.WaitGroup
	lands := make([]landing, len(r))
	for i, f := range r {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-tr.reached(f.Aim)
			time.Sleep(f.At)
			lands[i] = tr.where(time.Now())
			c.apply(f, src, tgt)
		}()
	}
	return func() []landing {
		wg.Wait()
		return lands
	}
}

// apply performs one fault and undoes it after its hold time.
func (c *cluster) apply(f fault, src, tgt int) {
	fwd, back := c.proxy[src][tgt], c.proxy[tgt][src]
	switch f.Kind {
	case faultKillSource, faultKillTarget, faultKillOther:
		p := c.procs[c.role(f.Kind, src, tgt)]
		c.kill(p)
		time.Sleep(f.Hold)
		c.restart(p)
	case faultCut:
		fwd.Cut()
	case faultPartition:
		_ = fwd.Partition()
		_ = back.Partition()
		time.Sleep(f.Hold)
		c.heal(fwd, back)
	case faultBlackhole:
		fwd.Blackhole(true)
		time.Sleep(f.Hold)
		// Lift it first, then cut: what was stuck in the hole fails now,
		// not after the node's request timeout, and a connection a client
		// opens right after the cut is not swallowed.
		fwd.Blackhole(false)
		fwd.Cut()
		c.heal(fwd)
	case faultLatency:
		fwd.SetLatency(ms(int(f.N)))
		back.SetLatency(ms(int(f.N)))
		time.Sleep(f.Hold)
		fwd.SetLatency(0)
		back.SetLatency(0)
	case faultDrop:
		fwd.DropAfter(f.N)
		time.Sleep(f.Hold)
		fwd.DropAfter(-1)
	case faultStart:
		c.operatorStart(src)
	case faultLoseReplies:
		fwd.LoseReplies(true)
		time.Sleep(f.Hold)
		fwd.LoseReplies(false)
		fwd.Cut() // what waits for a lost reply fails now
	}
}

// operatorStart asks node i to start the agent, as an operator's `capsule
// agent start` does, over the local API (the CLI would add a process start
// to the delay and miss the activate round trip). A refusal is the expected
// answer while the agent is frozen; the monitor tells whether a start that
// went through made a second runner.
func (c *cluster) operatorStart(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := c.procs[i]
	st, err := p.client().StartAgent(ctx, c.agent)
	if err != nil {
		c.t.Logf("operator: agent start on %s: %s", p.name, firstLine(err.Error()))
		return
	}
	c.t.Logf("operator: agent start on %s: %s at epoch %d", p.name, st.State, st.Epoch)
}

// role returns the node a kill fault aims at.
func (c *cluster) role(k faultKind, src, tgt int) int {
	switch k {
	case faultKillSource:
		return src
	case faultKillTarget:
		return tgt
	}
	for i := range c.procs {
		if i != src && i != tgt {
			return i
		}
	}
	return src
}

// heal lifts every fault of the given proxies (all of them when none is given).
func (c *cluster) heal(pxs ...interface{ Heal() error }) {
	if len(pxs) == 0 {
		for _, row := range c.proxy {
			for _, px := range row {
				if px != nil {
					pxs = append(pxs, px)
				}
			}
		}
	}
	for _, px := range pxs {
		if err := px.Heal(); err != nil {
			c.t.Errorf("heal proxy: %v", err)
		}
	}
}
