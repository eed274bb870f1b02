package par

import (
	"sync/atomic"
	"testing"
)

func TestDoCallsEachIndexOnceWithinTheBound(t *testing.T) {
	for _, c := range []struct{ n, w int }{{0, 4}, {1, 4}, {5, 1}, {100, 3}, {7, 0}, {3, 10}} {
		var running, peak atomic.Int32
		seen := make([]atomic.Int32, c.n)
		Do(c.n, c.w, func(i int) {
			r := running.Add(1)
			for {
				p := peak.Load()
				if r <= p || peak.CompareAndSwap(p, r) {
					break
				}
			}
			seen[i].Add(1)
			running.Add(-1)
		})
		for i := range seen {
			if got := seen[i].Load(); got != 1 {
				t.Errorf("n=%d w=%d: fn(%d) called %d times, want once", c.n, c.w, i, got)
			}
		}
		if limit := int32(max(1, c.w)); peak.Load() > limit {
			t.Errorf("n=%d w=%d: %d calls ran at once, want at most %d", c.n, c.w, peak.Load(), limit)
		}
	}
}
