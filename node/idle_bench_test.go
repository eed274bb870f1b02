package node

import (
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider/sim"
)

// What N idle agents cost a node in-process (issue 13, Performance: 1,000
// idle agents use < 1 % of a core and < 200 MiB in total): agent-loop
// agents on the embedded model endpoint that answered their task and went
// idle. The benchmark reports the live heap, goroutines and open files per
// agent over the same node with none; bench/idle.sh measures a real node
// process. IDLE_AGENTS=N sets N (default 200), IDLE_TURNS=T the turns
// each agent answers before it idles (default 1, its task: what an idle
// agent holds must not grow with the steps it took); IDLE_HEAP_PROFILE=FILE
// writes the heap profile while the agents are idle:
//
//	IDLE_HEAP_PROFILE=heap.out go test ./node -run '^$' -bench IdleAgents -benchtime 1x -o node.test
//	go tool pprof -sample_index=inuse_space -top node.test heap.out

var echo = &api.ModelRef{Provider: "openai", API: "chat", Model: sim.Echo}

func BenchmarkIdleAgents(b *testing.B) {
	count, turns := envInt(b, "IDLE_AGENTS", 200), envInt(b, "IDLE_TURNS", 1)
	hs := httptest.NewServer(sim.New(sim.Config{}))
	b.Cleanup(hs.Close)
	n := newNode(b, b.TempDir(), nodeOpts{agentLoop: true, endpoint: hs.URL})
	before := usage()
	ids := createIdle(b, n, count)
	for range turns - 1 {
		for _, id := range ids {
			sayAndWait(b, n, id, "hi again")
		}
	}
	after := usage()
	for b.Loop() {
		after = usage()
	}
	per := func(x, y float64) float64 { return (y - x) / float64(count) }
	b.ReportMetric(per(before.heap, after.heap)/1024, "heap-KiB/agent")
	b.ReportMetric(per(before.goroutines, after.goroutines), "goroutines/agent")
	b.ReportMetric(per(before.fds, after.fds), "fds/agent")
	b.ReportMetric(after.heap/(1<<20), "heap-MiB")
	if path := os.Getenv("IDLE_HEAP_PROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
}

// writeHeapProfile writes the heap profile while the agents are alive (a
// -memprofile is written after the node has closed).
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a positive number", name, s)
	}
	return v
}

// footprint is what the process holds at one moment.
type footprint struct{ heap, goroutines, fds float64 }

// usage collects garbage and reads the live heap, goroutines and open files.
func usage() footprint {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, _ := os.ReadDir("/proc/self/fd")
	return footprint{heap: float64(ms.HeapAlloc), goroutines: float64(runtime.NumGoroutine()), fds: float64(len(fds))}
}

// createIdle creates count agent-loop agents, a few at a time, and waits
// until every one is idle.
func createIdle(b *testing.B, n *Node, count int) []string {
	b.Helper()
	ids := make([]string, count)
	var wg sync.WaitGroup
	errs := make(chan error, count)
	work := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range work {
				st, err := n.CreateAgent(b.Context(), api.CreateAgentRequest{Model: echo, Task: "hi"})
				if err != nil {
					errs <- fmt.Errorf("agent %d: %w", i, err)
					continue
				}
				ids[i] = st.ID
			}
		})
	}
	for i := range count {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	for _, id := range ids {
		waitIdle(b, n, id, 0)
	}
	return ids
}

// sayAndWait journals a user message, wakes the agent and waits until it
// answered and is idle again.
func sayAndWait(b *testing.B, n *Node, id, text string) {
	b.Helper()
	a, err := n.getTenant(id)
	if err != nil {
		b.Fatal(err)
	}
	steps := a.steps.Load()
	a.mu.Lock()
	_, err = a.log.Append(journal.KindUser, a.holder.Holder(), n.wallTime(), journal.UserMessage{Text: text})
	a.wake()
	a.mu.Unlock()
	if err != nil {
		b.Fatal(err)
	}
	waitIdle(b, n, id, steps)
}

// waitIdle waits until the agent took more than steps steps and is idle.
func waitIdle(b *testing.B, n *Node, id string, steps uint64) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := n.Agent(b.Context(), id); err == nil && st.Activity == activityIdle && st.Steps > steps {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, _ := n.Agent(b.Context(), id)
	b.Fatalf("agent %s is not idle: %+v", id, st)
}
