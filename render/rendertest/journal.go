// Package rendertest helps test renderers: a builder of journals, static
// validators that encode each provider's hard request rules and fail with
// the provider's own error strings (reference §1 and §2), and rapid
// generators of hostile journals. Test code only; it may be imported by
// any package's tests.
package rendertest

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentcapsule/capsule/journal"
)

// Producers used across tests.
var (
	Claude      = journal.Producer{Provider: "anthropic", API: "messages", Model: "claude-sonnet-4-6"}
	ClaudeOpus  = journal.Producer{Provider: "anthropic", API: "messages", Model: "claude-opus-5-5"}
	GPT5        = journal.Producer{Provider: "openai", API: "responses", Model: "gpt-5"}
	GPT41       = journal.Producer{Provider: "openai", API: "chat", Model: "gpt-4.1"}
	Gemini3     = journal.Producer{Provider: "google", API: "generateContent", Model: "gemini-3-pro"}
	Qwen        = journal.Producer{Provider: "ollama", API: "chat", Model: "qwen3"}
	DeepSeek    = journal.Producer{Provider: "deepseek", API: "chat", Model: "deepseek-reasoner"}
	MistralChat = journal.Producer{Provider: "mistral", API: "chat", Model: "mistral-large"}
)

// Journal builds a journal in total order, one machine, for tests. The
// events carry no IDs or chain: the renderer does not use them. Bodies
// are json.Marshal output (struct field order) unless Canonical is set,
// which stores them in RFC 8785 form as the journal package writes them.
type Journal struct {
	Canonical bool
	events    []journal.Event
}

// Events returns the events built so far.
func (j *Journal) Events() []journal.Event { return j.events }

// Len returns the number of events.
func (j *Journal) Len() int { return len(j.events) }

// Add appends an event of kind with body marshalled to JSON.
func (j *Journal) Add(kind journal.Kind, body any) *Journal {
	b, err := json.Marshal(body)
	if err == nil && j.Canonical {
		b, err = journal.Canonicalize(b)
	}
	if err != nil {
		panic(err)
	}
	return j.AddRaw(kind, b)
}

// AddRaw appends an event whose body is the given bytes, valid or not.
func (j *Journal) AddRaw(kind journal.Kind, body []byte) *Journal {
	n := uint64(len(j.events) + 1)
	j.events = append(j.events, journal.Event{
		Machine: "m1", Seq: n, Clock: n, Epoch: 1, V: journal.SchemaVersion, Kind: kind, Body: body,
	})
	return j
}

// System appends a system instruction.
func (j *Journal) System(text string) *Journal {
	return j.Add(journal.KindInstruction, journal.Instruction{Role: "system", Text: text})
}

// Developer appends a developer instruction.
func (j *Journal) Developer(text string) *Journal {
	return j.Add(journal.KindInstruction, journal.Instruction{Role: "developer", Text: text})
}

// User appends a user message.
func (j *Journal) User(text string) *Journal {
	return j.Add(journal.KindUser, journal.UserMessage{Text: text})
}

// Say appends assistant text of step.
func (j *Journal) Say(p journal.Producer, step, text string) *Journal {
	return j.Add(journal.KindAssistant, journal.AssistantMessage{Text: text, Producer: p, Step: step})
}

// Think appends readable reasoning with a signature (Anthropic style).
func (j *Journal) Think(p journal.Producer, step, text, sig string) *Journal {
	return j.Add(journal.KindReasoning, journal.Reasoning{Producer: p, Step: step, Text: text, Signature: sig})
}

// Reason appends any reasoning body.
func (j *Journal) Reason(r journal.Reasoning) *Journal { return j.Add(journal.KindReasoning, r) }

// Call appends a tool call with JSON arguments.
func (j *Journal) Call(p journal.Producer, step, id, name, args string) *Journal {
	return j.Add(journal.KindToolCall, journal.ToolCall{CallID: id, Name: name, Arguments: json.RawMessage(args), Producer: p, Step: step})
}

// CallWith appends any tool-call body.
func (j *Journal) CallWith(c journal.ToolCall) *Journal { return j.Add(journal.KindToolCall, c) }

// Result appends a tool result.
func (j *Journal) Result(id, name, content string) *Journal {
	return j.Add(journal.KindToolResult, journal.ToolResult{CallID: id, Name: name, Content: content})
}

// Failed appends an error result.
func (j *Journal) Failed(id, name, content string) *Journal {
	return j.Add(journal.KindToolResult, journal.ToolResult{CallID: id, Name: name, Content: content, IsError: true})
}

// Usage appends a usage event.
func (j *Journal) Usage(p journal.Producer, input, estimated int64) *Journal {
	return j.Add(journal.KindUsage, journal.Usage{Producer: p, InputTokens: input, EstimatedTokens: estimated})
}

// Exchange appends a whole step: a call and its result.
func (j *Journal) Exchange(p journal.Producer, step, id, name, args, result string) *Journal {
	return j.Call(p, step, id, name, args).Result(id, name, result)
}

// Step returns a step name unique within a test: prefix and n.
func Step(prefix string, n int) string { return prefix + strconv.Itoa(n) }

// words feed Long's texts: varied enough that token counting sees
// realistic text, not one memoized word.
var words = strings.Fields(`the a renderer journal window token model provider call result
tool function file path line error value config build test agent capsule move epoch holder
reads writes returns checks keeps drops fits counts maps sends waits starts stops runs
quickly carefully again before after because while until unless although however
alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma omega
0 1 2 3 42 128 1024 65536 3.14 2026 v1.2.3 main.go render.go /src/app/server.go`)

// text returns n words chosen by a deterministic walk from seed.
func text(seed, n int) string {
	var b strings.Builder
	x := uint32(seed)*2654435761 + 1
	for i := 0; i < n; i++ {
		x = x*1664525 + 1013904223
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[int(x>>8)%len(words)])
	}
	return b.String()
}

// Long returns a deterministic journal of about n events: turns of a user
// request, a step with reasoning and two parallel calls by p, their
// results (one a few kilobytes), an answer and a usage record, with
// canonical bodies like a stored journal's. It feeds benchmarks and
// large-journal tests.
func Long(n int, p journal.Producer) []journal.Event {
	j := &Journal{Canonical: true, events: make([]journal.Event, 0, n+8)}
	j.System("You are a coding agent. Work in small steps and test as you go.")
	for t := 0; j.Len() < n; t++ {
		step := "s" + strconv.Itoa(t)
		a, b := "call_"+strconv.Itoa(2*t), "call_"+strconv.Itoa(2*t+1)
		j.User(text(t, 25+t%40))
		j.Reason(journal.Reasoning{Producer: p, Step: step, Text: text(t+1, 60), Signature: "sig" + strconv.Itoa(t)})
		j.Call(p, step, a, "read_file", `{"path":"/src/app/file`+strconv.Itoa(t)+`.go","limit":200}`)
		j.Call(p, step, b, "search", `{"query":"`+text(t+2, 3)+`"}`)
		j.Result(b, "search", text(t+3, 40))
		j.Result(a, "read_file", text(t+4, 150+t%600))
		j.Say(p, step+"a", text(t+5, 30+t%50))
		j.Usage(p, int64(1000+t), int64(900+t))
	}
	return j.events
}
