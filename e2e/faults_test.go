package e2e

import (
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
)

var faultKinds = []faultKind{faultKillSource, faultKillTarget, faultKillOther, faultCut,
	faultPartition, faultBlackhole, faultLatency, faultDrop}

// fault is one scheduled fault: it starts At after the move starts.
type fault struct {
	Kind faultKind
	At   time.Duration
	Hold time.Duration
	N    int64
}

func (f fault) String() string {
	s := fmt.Sprintf("%s at %v", f.Kind, f.At)
	switch f.Kind {
	case faultCut:
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

// planRounds draws the whole fault schedule from the seed: most moves get
// one fault, some two, some none.
func planRounds(seed int64, n int) []round {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	out := make([]round, n)
	for i := range out {
		k := 1
		switch x := rng.IntN(10); {
		case x == 0:
			k = 0
		case x >= 8:
			k = 2
		}
		for j := 0; j < k; j++ {
			out[i] = append(out[i], drawFault(rng))
		}
	}
	return out
}

func drawFault(rng *rand.Rand) fault {
	f := fault{Kind: faultKinds[rng.IntN(len(faultKinds))], At: ms(rng.IntN(500))}
	switch f.Kind {
	case faultKillSource, faultKillTarget, faultKillOther:
		f.Hold = ms(50 + rng.IntN(550)) // down time
	case faultPartition, faultBlackhole:
		f.Hold = ms(100 + rng.IntN(1400))
	case faultLatency:
		f.Hold, f.N = ms(300+rng.IntN(1200)), int64(2+rng.IntN(40))
	case faultDrop:
		f.Hold, f.N = ms(300+rng.IntN(1200)), int64(100)<<rng.IntN(11) // 100 B .. 100 KiB
	}
	return f
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// inject runs the round's faults concurrently, each in its own goroutine,
// and returns a function that waits for all of them to be over (killed
// nodes restarted, links healed).
func (c *cluster) inject(r round, src, tgt int) (wait func()) {
	var wg sync.WaitGroup
	for _, f := range r {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(f.At)
			c.apply(f, src, tgt)
		}()
	}
	return wg.Wait
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
	}
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
