package render_test

import (
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
)

// longJournals are built once per size and shared by the benchmarks.
var longJournals sync.Map

func longJournal(n int) []journal.Event {
	if v, ok := longJournals.Load(n); ok {
		return v.([]journal.Event)
	}
	events := rt.Long(n, rt.Claude)
	longJournals.Store(n, events)
	return events
}

// BenchmarkRender renders journals of 10k, 100k and 1M events into a
// 128k-token window for each API, marshalled to the request body. The
// target is the journal's own model for Anthropic (reasoning replayed)
// and another model elsewhere. Beside ns/op and allocs/op it reports the
// events kept in the window and the allocations per kept event.
//
//	go test ./render -run '^$' -bench BenchmarkRender -benchmem
func BenchmarkRender(b *testing.B) {
	targets := []render.Target{
		{API: render.OpenAIChat, Model: "gpt-4.1"},
		{API: render.OpenAIResponses, Model: "gpt-5"},
		{API: render.Anthropic, Model: "claude-sonnet-4-6"},
		{API: render.Gemini, Model: "gemini-3-pro"},
		{API: render.Ollama, Model: "qwen3"},
	}
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		events := longJournal(n)
		for _, tg := range targets {
			tg.Window = 128_000
			tg.Tools = rt.ToolSet("read_file", "search")
			b.Run(fmt.Sprintf("%s/%dk", tg.API, n/1000), func(b *testing.B) {
				var rep *render.Report
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					var err error
					if _, rep, err = wire.Render(events, tg); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
				kept := rep.KeptEvents
				b.ReportMetric(float64(kept), "kept-events")
				b.ReportMetric(float64(testing.AllocsPerRun(1, func() { _, _, _ = wire.Render(events, tg) }))/float64(kept), "allocs/kept-event")
			})
		}
	}
}

// cpuTime is the process's user and system CPU time in nanoseconds. On a
// shared machine ns/op counts time spent waiting for a core; cpu-ms/op
// counts only the work (all threads, garbage collection included).
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkPlan measures planning without the wire encoding into a small
// window, so the linear pass over every event's header dominates; it
// reports the cost per journal event.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		events := longJournal(n)
		tg := render.Target{API: render.Anthropic, Model: "claude-sonnet-4-6", Window: 2_000}
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := render.NewPlan(events, tg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/float64(n), "cpu-ns/event")
		})
	}
}
