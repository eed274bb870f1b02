package memory

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// opClock records each operation's wall and CPU time (user and system of
// the whole process, so the garbage collector's work counts), for medians:
// on a shared machine the CPU time says what an operation costs, the wall
// time what it took.
type opClock struct {
	wall, cpu []float64 // milliseconds
	t0        time.Time
	c0        time.Duration
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *opClock) start() { c.t0, c.c0 = time.Now(), cpuTime() }

func (c *opClock) stop() {
	c.wall = append(c.wall, float64(time.Since(c.t0))/1e6)
	c.cpu = append(c.cpu, float64(cpuTime()-c.c0)/1e6)
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func (c *opClock) report(b *testing.B) {
	b.ReportMetric(median(c.wall), "p50-wall-ms")
	b.ReportMetric(median(c.cpu), "p50-cpu-ms")
}
