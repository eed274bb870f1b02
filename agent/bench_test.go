package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// claude is the benchmarks' model: a 200k-token window, thinking, and the
// journal's reasoning replayed to it (its own).
var claude = journal.ModelChange{Provider: "anthropic", API: "messages", Model: "claude-sonnet-4-6"}

// BenchmarkStep measures the loop's own cost per step, everything except
// the model's and the tool's time: agent.Step over a journal of N events
// (user turns, reasoning, assistant text, tool calls and results of a few
// hundred bytes, usage records) with a client that answers at once with
// one tool call and a tool that returns at once, appending to an
// in-memory journal. Each operation is one model step and one tool step;
// model-ns/step and tool-ns/step report their wall time apart,
// model-cpu-ns/step the process's CPU time per model step. "full" renders with
// wire.Render at every step, "incremental" with one wire.Incremental.
//
//	go test ./agent -run '^$' -bench BenchmarkStep -benchtime 200x
func BenchmarkStep(b *testing.B) {
	journals := map[int]*book{}
	for _, n := range []int{10_000, 100_000} {
		for _, mode := range []string{"full", "incremental"} {
			b.Run(fmt.Sprintf("%dk/%s", n/1000, mode), func(b *testing.B) {
				if journals[n] == nil {
					journals[n] = benchJournal(b, n) // built only for the sizes -bench selects
				}
				runSteps(b, journals[n], mode == "incremental")
			})
		}
	}
}

// runSteps takes model and tool steps in turn on a copy of base.
func runSteps(b *testing.B, base *book, incremental bool) {
	bk := &book{t: nil, w: journal.NewWriter("m1"), events: append([]journal.Event(nil), base.events...)}
	*bk.w = *base.w
	var inc wire.Incremental
	c, x := &instant{}, &quickBox{}
	env := &Env{Append: bk.append, Tools: x, MaxTurnSteps: 1 << 30,
		Client:  func(render.API) (provider.Client, error) { return c, nil },
		BaseURL: func(string, render.API) string { return "http://127.0.0.1:1" },
		Secret:  func(string) (string, bool) { return "", false }}
	if incremental {
		env.Render = inc.Render
	}
	var modelCPU time.Duration
	step := func(want Action) time.Duration {
		env.Events = bk.events
		t0, c0 := time.Now(), cpuTime()
		rep, err := Step(context.Background(), env)
		d := time.Since(t0)
		if want == ModelStep {
			modelCPU += cpuTime() - c0
		}
		if err != nil || rep.Action != want {
			b.Fatalf("step: %v, action %v, want %v", err, rep.Action, want)
		}
		return d
	}
	step(ModelStep) // the first render of a run is a full one either way
	step(ToolStep)
	var model, tool time.Duration
	modelCPU = 0
	for b.Loop() {
		model += step(ModelStep)
		tool += step(ToolStep)
	}
	b.ReportMetric(float64(model.Nanoseconds())/float64(b.N), "model-ns/step")
	b.ReportMetric(float64(tool.Nanoseconds())/float64(b.N), "tool-ns/step")
	b.ReportMetric(float64(modelCPU.Nanoseconds())/float64(b.N), "model-cpu-ns/step")
	b.ReportMetric(float64(len(bk.events)), "events")
}

// cpuTime is the CPU time the process used so far, all threads (garbage
// collection included): on a busy machine it tells the work a step costs
// apart from the time it waited for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchJournal builds a journal of about n events that ends with a user
// request: turns of a request, then tool loops of reasoning, a call, its
// result and usage, then an answer.
func benchJournal(b *testing.B, n int) *book {
	bk := &book{w: journal.NewWriter("m1")}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	add := func(kind journal.Kind, body any) { must(bk.append([]journal.Kind{kind}, []any{body})) }
	own := journal.Producer{Provider: claude.Provider, API: claude.API, Model: claude.Model}
	add(journal.KindModelChange, claude)
	add(journal.KindInstruction, journal.Instruction{Role: "system", Text: "You are a coding agent. Work in small steps and test as you go."})
	for t := 0; len(bk.events) < n; t++ {
		add(journal.KindUser, journal.UserMessage{Text: words(t, 30)})
		for k := 0; k < 3; k++ {
			step := "s" + strconv.Itoa(t) + "-" + strconv.Itoa(k)
			id := "toolu_" + strconv.Itoa(t) + "_" + strconv.Itoa(k)
			add(journal.KindReasoning, journal.Reasoning{Producer: own, Step: step, Text: words(t+k, 40), Signature: "sig" + id})
			add(journal.KindToolCall, journal.ToolCall{Producer: own, Step: step, CallID: id, Name: "look",
				Arguments: json.RawMessage(`{"q":"` + words(t+k+1, 4) + `"}`)})
			add(journal.KindToolResult, journal.ToolResult{CallID: id, Content: words(t+k+2, 60+(t*7+k)%90)})
			add(journal.KindUsage, journal.Usage{Producer: own, InputTokens: int64(20000 + t), EstimatedTokens: int64(19000 + t)})
		}
		step := "s" + strconv.Itoa(t) + "-answer"
		add(journal.KindAssistant, journal.AssistantMessage{Producer: own, Step: step, Text: words(t+5, 40), StopReason: "end_turn"})
	}
	add(journal.KindUser, journal.UserMessage{Text: "Next task: look up the newest failure."})
	return bk
}

// words returns a deterministic text of n words.
func words(seed, n int) string {
	vocab := []string{"the", "file", "test", "fails", "because", "parser", "returns", "nil", "when", "input", "is", "empty", "fix", "and", "rerun", "build"}
	var s strings.Builder
	x := uint32(seed*2654435761 + 1)
	for i := 0; i < n; i++ {
		x = x*1664525 + 1013904223
		if i > 0 {
			s.WriteByte(' ')
		}
		s.WriteString(vocab[x>>28])
	}
	return s.String()
}

// instant is a provider.Client that answers every request at once with
// reasoning and one call of "look".
type instant struct{ n int }

func (c *instant) Call(_ context.Context, req *provider.Request) (*provider.Response, error) {
	c.n++
	id := "toolu_bench_" + strconv.Itoa(c.n)
	return &provider.Response{Attempts: 1, StopReason: "tool_use", Events: []provider.Output{
		{Kind: journal.KindReasoning, Body: journal.Reasoning{Producer: req.Producer, Step: req.Step, Text: words(c.n, 40), Signature: "sig" + id}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{Producer: req.Producer, Step: req.Step, CallID: id, Name: "look",
			Arguments: json.RawMessage(`{"q":"` + words(c.n, 3) + `"}`)}},
	}}, nil
}

// quickBox is a Toolbox whose one tool, "look", answers at once with a
// few hundred bytes.
type quickBox struct{ n int }

func (x *quickBox) Tools() []render.Tool { return (&box{}).Tools() }

func (x *quickBox) Run(context.Context, string, json.RawMessage) ToolOutput {
	x.n++
	return ToolOutput{Content: words(x.n, 60)}
}
