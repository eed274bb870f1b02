package etcd_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/authority"
	"github.com/agentcapsule/capsule/vfs"
)

// BenchmarkCAS measures one compare-and-swap round trip of an agent's key
// (the caller holds the current entry: the activate of a move whose
// source read the key before freezing), on the embedded etcd over TLS on
// loopback, beside the local comparator: Mem kept in a fsynced file, the
// shape of a node's own record write. It reports the median and p99 of
// the round trips and the process's peak RSS.
//
//	go test -run '^$' -bench CAS -count 5 ./authority/etcd/
func BenchmarkCAS(b *testing.B) {
	b.Run("etcd", func(b *testing.B) { benchCAS(b, newAuthority(b, server.addr)) })
	b.Run("memfile", func(b *testing.B) {
		m, err := authority.OpenMem(vfs.OS{}, b.TempDir()+"/fleet.json")
		if err != nil {
			b.Fatal(err)
		}
		benchCAS(b, m)
	})
	b.Run("etcd-activate", func(b *testing.B) { benchActivate(b, newAuthority(b, server.addr)) })
}

// benchCAS swaps one key b.N times, each time from the entry the last
// swap returned, alternating holders as moves do.
func benchCAS(b *testing.B, a authority.Authority) {
	ctx := context.Background()
	benchSeq++
	agent := fmt.Sprintf("bench-%d", benchSeq)
	cur, err := authority.Create(ctx, a, agent, "n0")
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		next := authority.Holding{Node: fmt.Sprintf("n%d", i%2), Epoch: cur.Epoch + 1, State: authority.Held}
		if cur, err = a.CompareAndSwap(ctx, agent, cur, next); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	report(b, lat)
}

// benchActivate is the move's Activate without a cached entry: a read and
// a swap.
func benchActivate(b *testing.B, a authority.Authority) {
	ctx := context.Background()
	benchSeq++
	agent := fmt.Sprintf("bench-act-%d", benchSeq)
	cur, err := authority.Create(ctx, a, agent, "n0")
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if cur, err = authority.Activate(ctx, a, agent, cur.Node, cur.Epoch, fmt.Sprintf("n%d", i%2)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	report(b, lat)
}

// benchSeq names each benchmark run's agent.
var benchSeq int

func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MB")
	}
}
