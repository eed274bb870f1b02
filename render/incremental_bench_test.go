package render_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
)

// BenchmarkIncremental renders a journal of n events grown by one turn
// (eight events) per operation, with wire.Render ("full") and with one
// wire.Incremental ("incremental"), into a 128k-token window.
//
//	go test ./render -run '^$' -bench BenchmarkIncremental -benchmem
func BenchmarkIncremental(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		events := longJournal(n + 80_000)
		for _, api := range []render.API{render.Anthropic, render.OpenAIResponses} {
			tg := render.Target{API: api, Model: "claude-sonnet-4-6", Window: 128_000, Tools: rt.ToolSet("read_file", "search")}
			if api == render.OpenAIResponses {
				tg.Model = "gpt-5"
			}
			for _, mode := range []string{"full", "incremental"} {
				b.Run(fmt.Sprintf("%s/%dk/%s", api, n/1000, mode), func(b *testing.B) {
					var inc wire.Incremental
					render := wire.Render
					if mode == "incremental" {
						render = inc.Render
					}
					end := n
					if _, _, err := render(events[:end], tg); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						end += 8
						if end > len(events) {
							end = n
						}
						if _, _, err := render(events[:end], tg); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkIncrementalWorkingMemory is BenchmarkIncremental's incremental
// case with a working memory of about 2 KiB pinned after the
// instructions: "same" keeps it, "changed" edits it at every operation
// (the memory tool's write before each model step), which must not send
// the render back to a full one.
//
//	go test ./render -run '^$' -bench BenchmarkIncrementalWorkingMemory -benchmem
func BenchmarkIncrementalWorkingMemory(b *testing.B) {
	const n = 100_000
	events := longJournal(n + 80_000)
	base := strings.Repeat("- a note the agent keeps about the task at hand\n", 40)
	for _, api := range []render.API{render.Anthropic, render.OpenAIResponses} {
		tg := render.Target{API: api, Model: "claude-sonnet-4-6", Window: 128_000, Tools: rt.ToolSet("read_file", "search")}
		if api == render.OpenAIResponses {
			tg.Model = "gpt-5"
		}
		for _, mode := range []string{"none", "same", "changed"} {
			b.Run(fmt.Sprintf("%s/%dk/%s", api, n/1000, mode), func(b *testing.B) {
				var inc wire.Incremental
				end, step := n, 0
				mem := func() string {
					switch mode {
					case "none":
						return ""
					case "same":
						return base
					}
					return base + fmt.Sprintf("- step %d\n", step)
				}
				tg.WorkingMemory = mem()
				if _, _, err := inc.Render(events[:end], tg); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					end, step = end+8, step+1
					if end > len(events) {
						end = n
					}
					tg.WorkingMemory = mem()
					if _, _, err := inc.Render(events[:end], tg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
