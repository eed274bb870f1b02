package rendertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"pgregory.net/rapid"
)

// Secret is a string the journal holds that may reach only one model:
// reasoning text, a signature, encrypted content, a provider item ID.
type Secret struct {
	Producer journal.Producer
	Text     string
}

// Case is a generated journal with its secrets and the tools it uses.
type Case struct {
	Journal *Journal
	Secrets []Secret
	Tools   []string
}

// producers is the cast of a generated journal.
var producers = []journal.Producer{Claude, ClaudeOpus, GPT5, GPT41, Gemini3, Qwen, DeepSeek, MistralChat}

// ToolNames are the tools a generated journal may call.
// Two of them are outside some APIs' name rules.
var ToolNames = []string{"read_file", "write_file", "search", "run_tests", "legacy_search", "fs.read_file", "mcp/github:create-issue"}

// Targets is a spread of targets over every API and the capability rows
// that change rendering.
var Targets = []render.Target{
	{API: render.OpenAIChat, Model: "gpt-4.1"},
	{API: render.OpenAIChat, Model: "o3"},
	{API: render.OpenAIChat, Provider: "mistral", Model: "mistral-large"},
	{API: render.OpenAIChat, Provider: "deepseek", Model: "deepseek-reasoner"},
	{API: render.OpenAIResponses, Model: "gpt-5"},
	{API: render.OpenAIResponses, Model: "gpt-4.1"},
	{API: render.Anthropic, Model: "claude-sonnet-4-6"},
	{API: render.Anthropic, Model: "claude-opus-5-5"},
	{API: render.Anthropic, Model: "claude-opus-4-8"},
	{API: render.Anthropic, Model: "claude-3-5-haiku"},
	{API: render.Gemini, Model: "gemini-3-pro"},
	{API: render.Gemini, Model: "gemini-2.5-flash"},
	{API: render.Ollama, Model: "qwen3"},
	{API: render.Ollama, Model: "llama3.3"},
}

// ToolSet declares the named tools with a small object schema.
func ToolSet(names ...string) []render.Tool {
	var out []render.Tool
	for _, n := range names {
		out = append(out, render.Tool{Name: n, Description: "Test tool " + n,
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer"}},"additionalProperties":false}`)})
	}
	return out
}

// GenTarget draws a target, its tool set and its window.
func GenTarget(t *rapid.T) render.Target {
	tg := rapid.SampledFrom(Targets).Draw(t, "target")
	n := rapid.IntRange(0, len(ToolNames)).Draw(t, "tools")
	tg.Tools = ToolSet(ToolNames[:n]...)
	tg.Window = rapid.OneOf(rapid.Just(0), rapid.IntRange(1, 300), rapid.IntRange(300, 3000), rapid.IntRange(3000, 30000)).Draw(t, "window")
	tg.NoThinking = rapid.Bool().Draw(t, "noThinking")
	return tg
}

// gen holds the state of one generated journal.
type gen struct {
	t     *rapid.T
	own   journal.Producer // drawn more often, so replay paths are covered
	c     *Case
	n     int      // counter for unique names
	calls []string // IDs of calls made so far, for orphans and duplicates
}

// GenJournal draws a journal of interleaved instructions, user turns and
// steps by several producers (own, the target's model, more often than
// the others), with crashes mid-call, whitespace-only texts, parallel calls, results out of
// order, orphan and duplicate results, huge results, invalid arguments,
// lifecycle, usage, unknown and malformed events.
func GenJournal(t *rapid.T, own journal.Producer) *Case {
	g := &gen{t: t, own: own, c: &Case{Journal: &Journal{}}}
	steps := rapid.IntRange(1, 14).Draw(t, "actions")
	for i := 0; i < steps; i++ {
		g.action()
	}
	return g.c
}

func (g *gen) next() int { g.n++; return g.n }

func (g *gen) action() {
	j := g.c.Journal
	switch rapid.IntRange(0, 15).Draw(g.t, "action") {
	case 0:
		j.System(fmt.Sprintf("System rule %d.", g.next()))
	case 1:
		j.Developer(fmt.Sprintf("Developer rule %d.", g.next()))
	case 2, 3, 4:
		g.user()
	case 5, 6, 7, 8, 9, 10:
		g.step()
	case 11:
		g.oddResult()
	case 12:
		j.Add(journal.KindModelChange, journal.ModelChange{Provider: "openai", API: "responses", Model: "gpt-5"})
		j.Add(journal.KindFrozen, journal.Frozen{Reason: "move"})
		j.Add(journal.KindResumed, journal.Resumed{})
	case 13:
		p := rapid.SampledFrom(producers).Draw(g.t, "usageProducer")
		est := int64(rapid.IntRange(1, 5000).Draw(g.t, "est"))
		j.Usage(p, est*int64(rapid.IntRange(80, 160).Draw(g.t, "ratio"))/100, est)
	case 14:
		j.AddRaw("future_kind", []byte(`{"x":1}`))
	case 15:
		kind := rapid.SampledFrom([]journal.Kind{journal.KindUser, journal.KindAssistant, journal.KindToolCall, journal.KindToolResult, journal.KindReasoning}).Draw(g.t, "badKind")
		j.AddRaw(kind, []byte(rapid.SampledFrom([]string{`{not json`, `[]`, `{"call_id":5}`, `{"text":"x","producer":"nope"}`, `"str"`}).Draw(g.t, "badBody")))
	}
}

func (g *gen) user() {
	m := journal.UserMessage{Text: fmt.Sprintf("User request %d: %s", g.next(), g.text("userLen"))}
	if rapid.IntRange(0, 7).Draw(g.t, "blankUser") == 0 {
		m.Text = "\n"
	}
	if rapid.IntRange(0, 5).Draw(g.t, "attach") == 0 {
		m.Attachments = []journal.Attachment{{Blob: "sha256:" + strings.Repeat("ab", 32), MediaType: "image/png", Name: "shot.png", Size: 1234}}
	}
	g.c.Journal.Add(journal.KindUser, m)
}

// text draws a text of a few words up to a huge one.
func (g *gen) text(label string) string {
	switch rapid.IntRange(0, 9).Draw(g.t, label) {
	case 0:
		return ""
	case 9:
		return strings.Repeat("lorem ipsum dolor sit amet ", rapid.IntRange(200, 2000).Draw(g.t, label+"Huge"))
	}
	return strings.Repeat("word ", rapid.IntRange(1, 30).Draw(g.t, label+"Words"))
}

func (g *gen) secret(p journal.Producer, kind string) string {
	s := fmt.Sprintf("%sSECRET%dX", kind, g.next())
	g.c.Secrets = append(g.c.Secrets, Secret{Producer: p, Text: s})
	return s
}

// step draws one assistant generation and the results of its calls.
func (g *gen) step() {
	j := g.c.Journal
	p := g.own
	if rapid.Bool().Draw(g.t, "foreign") {
		p = rapid.SampledFrom(producers).Draw(g.t, "producer")
	}
	step := fmt.Sprintf("step%d", g.next())
	if rapid.Bool().Draw(g.t, "reasoning") {
		j.Reason(g.reasoning(p, step))
	}
	if rapid.Bool().Draw(g.t, "say") {
		m := journal.AssistantMessage{Text: g.saying(), Producer: p, Step: step}
		g.decorate(p, &m.ItemID, &m.Signature, "msg")
		if rapid.IntRange(0, 9).Draw(g.t, "aborted") == 0 {
			m.StopReason = "aborted"
		}
		j.Add(journal.KindAssistant, m)
	}
	n := rapid.IntRange(0, 3).Draw(g.t, "calls")
	ids := make([]string, n)
	for k := range ids {
		ids[k] = g.callID()
		c := journal.ToolCall{CallID: ids[k], Name: rapid.SampledFrom(ToolNames).Draw(g.t, "tool"), Producer: p, Step: step}
		g.arguments(&c)
		g.decorate(p, &c.ItemID, &c.Signature, "fc")
		j.CallWith(c)
	}
	g.results(ids)
}

// saying draws an assistant text: words, words ending in whitespace, or
// the whitespace alone that Claude emits before a tool call.
func (g *gen) saying() string {
	switch rapid.IntRange(0, 5).Draw(g.t, "sayKind") {
	case 0:
		return "\n\n"
	case 1:
		return "Answer " + g.text("sayLen") + "\n"
	}
	return "Answer " + g.text("sayLen")
}

// decorate adds the producer's item ID and signature to an output item.
func (g *gen) decorate(p journal.Producer, itemID, sig *string, prefix string) {
	switch p.Provider {
	case "openai":
		*itemID = prefix + "_" + g.secret(p, "ITEM")
	case "google":
		*sig = base64.StdEncoding.EncodeToString([]byte(g.secret(p, "GSIG")))
		g.c.Secrets = append(g.c.Secrets, Secret{Producer: p, Text: *sig})
	}
}

func (g *gen) reasoning(p journal.Producer, step string) journal.Reasoning {
	r := journal.Reasoning{Producer: p, Step: step}
	switch p.Provider {
	case "anthropic":
		if rapid.IntRange(0, 4).Draw(g.t, "redacted") == 0 {
			r.Redacted, r.Encrypted = true, g.secret(p, "REDACTED")
		} else {
			r.Text, r.Signature = g.secret(p, "THINK"), g.secret(p, "ASIG")
		}
	case "openai":
		r.ItemID, r.Encrypted = "rs_"+g.secret(p, "RS"), g.secret(p, "ENC")
		if rapid.Bool().Draw(g.t, "summary") {
			r.Summary = []string{g.secret(p, "SUMMARY")}
		}
	case "google":
		r.Text = g.secret(p, "THOUGHT")
		r.Signature = base64.StdEncoding.EncodeToString([]byte(g.secret(p, "GSIG")))
		g.c.Secrets = append(g.c.Secrets, Secret{Producer: p, Text: r.Signature})
	default:
		r.Text = g.secret(p, "THINK")
	}
	return r
}

func (g *gen) callID() string {
	var id string
	switch rapid.IntRange(0, 5).Draw(g.t, "idKind") {
	case 0:
		id = "fc_x|" + strings.Repeat("y", 450) + fmt.Sprint(g.next())
	case 1:
		if len(g.calls) > 0 {
			id = rapid.SampledFrom(g.calls).Draw(g.t, "reuse") // the same ID in another step
			break
		}
		fallthrough
	case 2:
		id = fmt.Sprintf("toolu_%d", g.next())
	default:
		id = fmt.Sprintf("call_%d", g.next())
	}
	g.calls = append(g.calls, id)
	return id
}

func (g *gen) arguments(c *journal.ToolCall) {
	switch rapid.IntRange(0, 5).Draw(g.t, "args") {
	case 0:
		c.RawArguments = `{"path": "/tmp/x", "n": ` // cut off mid-stream
	case 1:
		c.Arguments = json.RawMessage(`[1,2,3]`)
	case 2:
	default:
		c.Arguments = json.RawMessage(fmt.Sprintf(`{"path":"/src/file%d.go","n":%d}`, g.next(), g.n))
	}
}

// results answers some calls, in any order, maybe twice, maybe with an
// error; the rest stay unanswered (the machine stopped mid-call).
func (g *gen) results(ids []string) {
	order := rapid.Permutation(ids).Draw(g.t, "resultOrder")
	for _, id := range order {
		switch rapid.IntRange(0, 6).Draw(g.t, "result") {
		case 0: // crash: no result
			continue
		case 1:
			g.c.Journal.Add(journal.KindFrozen, journal.Frozen{Reason: "crash"})
			g.c.Journal.Failed(id, "", "permission denied")
		case 2:
			g.c.Journal.Result(id, "", g.text("resultLen"))
			g.c.Journal.Result(id, "", "duplicate")
		case 3:
			g.c.Journal.Result(id, "", "\n")
		default:
			g.c.Journal.Result(id, "", "result "+g.text("resultLen"))
		}
	}
}

// oddResult adds a result whose call is not in the open step: an orphan,
// or a late answer to an old call.
func (g *gen) oddResult() {
	id := fmt.Sprintf("ghost_%d", g.next())
	if len(g.calls) > 0 && rapid.Bool().Draw(g.t, "late") {
		id = rapid.SampledFrom(g.calls).Draw(g.t, "lateID")
	}
	g.c.Journal.Result(id, "", "orphan result")
}
