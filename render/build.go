package render

import (
	"encoding/json"
	"strings"

	"github.com/agentcapsule/capsule/journal"
)

// SyntheticResult is the content of the error result made for a call the
// journal holds no result for (the machine stopped during the call).
const SyntheticResult = "tool call interrupted: no result recorded"

// builder holds the state of one render.
type builder struct {
	src      source
	t        Target
	caps     Caps
	own      journal.Producer
	seg      segmentation
	cnt      *counter
	report   Report
	declared map[string]bool // tool names declared by the target
	stubs    map[string]bool // tool names that need a stub declaration
	// wireNames maps the journal's tool names the API refuses to the
	// names they go by in the request (mapToolNames).
	wireNames map[string]string
	tools     []Tool       // the target's tools under their request names
	units     *unitMemo    // units built by earlier plans (Incremental), or nil
	requests  *requestMemo // requests digests quote (Incremental), or nil
	sums      *summaryMemo // the digest's summary (Incremental), or nil
	prevUser  []int32      // the digesters' table (digester), once built
}

func newBuilder(src source, t Target) *builder {
	caps := t.Capabilities()
	enc := caps.Tokenizer
	if enc == "" {
		enc = o200k
	}
	b := &builder{
		src: src, t: t, caps: caps, own: t.Producer(),
		cnt:      newCounter(enc),
		declared: map[string]bool{}, stubs: map[string]bool{}, wireNames: map[string]string{},
	}
	for _, tool := range t.Tools {
		b.declared[tool.Name] = true
	}
	b.report.API, b.report.Provider, b.report.Model = t.API, b.own.Provider, t.Model
	b.report.Events = src.len()
	b.report.Tokens.Tokenizer = enc
	b.report.Tokens.Exact = caps.Tokenizer != ""
	return b
}

// buildInstr decodes an instruction unit.
func (b *builder) buildInstr(u *unit) (Item, bool) {
	var in journal.Instruction
	if !b.decode(u.event, &in) {
		return Item{}, false
	}
	if in.Text == "" {
		return Item{}, false // nothing to say; APIs reject empty text
	}
	if b.blank(in.Text) {
		b.noteBlank(u.event, BlankInstruction, "")
		return Item{}, false
	}
	it := Item{Kind: ItemInstruction, Role: in.Role, Text: in.Text}
	it.tokens = b.cnt.count(in.Text) + perMessage
	return it, true
}

// buildUser decodes a user unit.
func (b *builder) buildUser(u *unit) (Item, bool) {
	var m journal.UserMessage
	if !b.decode(u.event, &m) {
		return Item{}, false
	}
	b.report.Attachments += len(m.Attachments)
	it := Item{Kind: ItemUser, Text: userText(m.Text, m.Attachments)}
	if it.Text == "" {
		return Item{}, false
	}
	if b.blank(it.Text) {
		b.noteBlank(u.event, BlankUserText, "")
		return Item{}, false
	}
	it.tokens = b.cnt.count(it.Text) + perMessage
	return it, true
}

// blank reports whether s is a text the API refuses as a text block
// because it holds only whitespace (Anthropic: "text content blocks must
// contain non-whitespace text"). Other APIs take it as it is.
func (b *builder) blank(s string) bool {
	return b.t.API == Anthropic && s != "" && strings.TrimSpace(s) == ""
}

// noteBlank records a whitespace-only text left out of the request.
func (b *builder) noteBlank(event int32, what, callID string) {
	b.report.Whitespace = append(b.report.Whitespace, WhitespaceNote{Event: int(event), What: what, CallID: callID})
}

// decode fully decodes event i's body into v; a body that does not decode
// is recorded as malformed and skipped.
func (b *builder) decode(i int32, v any) bool {
	if err := json.Unmarshal(b.src.body(i), v); err != nil {
		b.report.Malformed = append(b.report.Malformed, int(i))
		return false
	}
	return true
}

// buildStep decodes a step unit: its parts, then one result per call.
func (b *builder) buildStep(u *unit) (Item, bool) {
	prod := b.seg.producers[u.producer]
	st := &Step{Producer: prod, Own: prod == b.own}
	calls := b.seg.callsOf(u)
	aborted := b.aborted(u)
	k := 0 // index into calls, which follow the order of tool_call events
	for _, i := range b.seg.eventsOf(u) {
		switch b.src.kind(i) {
		case journal.KindReasoning:
			b.addReasoning(st, aborted, i)
		case journal.KindAssistant:
			b.addText(st, aborted, i)
		case journal.KindToolCall:
			b.addCall(st, &calls[k], i)
			k++
		}
	}
	var notes []CallNote
	for _, c := range calls {
		r := b.result(c)
		if r.Synthetic {
			notes = append(notes, CallNote{CallID: r.CallID, Name: r.Name})
		}
		st.Results = append(st.Results, r)
	}
	// Units are built newest first; keep the report in journal order.
	b.report.Synthesized = append(notes, b.report.Synthesized...)
	if len(st.Parts) == 0 {
		return Item{}, false // nothing to send, e.g. another model's reasoning alone
	}
	it := Item{Kind: ItemStep, Step: st}
	it.tokens = stepTokens(st)
	return it, true
}

// aborted reports whether a step ended with stop_reason "error" or
// "aborted": its reasoning and text are not sent (only its calls, which
// get their results or the synthetic one).
func (b *builder) aborted(u *unit) bool {
	for _, i := range b.seg.eventsOf(u) {
		if b.src.kind(i) != journal.KindAssistant {
			continue
		}
		f := [1]field{{key: "stop_reason"}}
		if scanFields(b.src.body(i), f[:]) && (rawEquals(f[0].raw, "error") || rawEquals(f[0].raw, "aborted")) {
			return true
		}
	}
	return false
}

func (b *builder) addReasoning(st *Step, aborted bool, i int32) {
	var r journal.Reasoning
	if !b.decode(i, &r) {
		return
	}
	if !st.Own || aborted || !b.replayable(&r) {
		b.report.ReasoningDropped++
		return
	}
	b.report.ReasoningKept++
	p := Part{Kind: PartReasoning, Text: r.Text, Signature: r.Signature, Encrypted: r.Encrypted,
		Redacted: r.Redacted, Summary: r.Summary}
	if b.t.API == OpenAIResponses {
		p.ItemID = r.ItemID
	}
	p.tokens = b.cnt.count(r.Text) + len(r.Encrypted)/4
	for _, s := range r.Summary {
		p.tokens += b.cnt.count(s)
	}
	st.Parts = append(st.Parts, p)
}

// replayable reports whether the API can take this reasoning back, given
// that it is the target model's own.
func (b *builder) replayable(r *journal.Reasoning) bool {
	switch b.t.API {
	case Anthropic:
		if r.Redacted {
			return r.Encrypted != ""
		}
		return r.Text != "" && r.Signature != ""
	case OpenAIResponses:
		return r.Encrypted != "" && r.ItemID != ""
	case OpenAIChat:
		return b.caps.ReasoningContent && r.Text != ""
	}
	return r.Text != "" // Gemini thought text, Ollama thinking
}

func (b *builder) addText(st *Step, aborted bool, i int32) {
	var m journal.AssistantMessage
	if !b.decode(i, &m) || aborted || m.Text == "" && !b.signedEmpty(st, &m) {
		return
	}
	if b.blank(m.Text) {
		b.noteBlank(i, BlankAssistantText, "")
		return // Claude emits "\n\n" before a tool call
	}
	p := Part{Kind: PartText, Text: m.Text, event: i}
	if st.Own {
		p.Signature = m.Signature
		if b.t.API == OpenAIResponses {
			p.ItemID = m.ItemID
		}
	}
	p.tokens = b.cnt.count(m.Text)
	st.Parts = append(st.Parts, p)
}

// signedEmpty reports whether an empty text is a Gemini model's own
// final part that carries its thought signature: replayed to that model,
// it keeps the signature chain intact.
func (b *builder) signedEmpty(st *Step, m *journal.AssistantMessage) bool {
	return b.t.API == Gemini && st.Own && m.Signature != ""
}

func (b *builder) addCall(st *Step, c *callRef, i int32) {
	var tc journal.ToolCall
	if err := json.Unmarshal(b.src.body(i), &tc); err != nil {
		// The header was readable, so the call exists; keep it with its
		// ID and name and no arguments.
		b.report.Malformed = append(b.report.Malformed, int(i))
		tc = journal.ToolCall{}
	}
	obj, text := argumentForms(&tc)
	id, journalName := b.callID(c), b.seg.callName(c)
	name := b.wireName(journalName)
	p := Part{Kind: PartCall, Call: Call{ID: id, JournalID: id, Name: name, JournalName: journalName, Arguments: obj, ArgumentsText: text}}
	if st.Own {
		p.Signature = tc.Signature
		if b.t.API == OpenAIResponses {
			p.ItemID = tc.ItemID
		}
	}
	p.tokens = b.cnt.count(name) + b.cnt.count(text) + perCall
	p.stub = b.takeStub(journalName, name)
	st.Parts = append(st.Parts, p)
}

// takeStub returns the cost of the stub declaration a call of tool
// journalName (request name name) needs, if it is the first call built
// that needs one (Anthropic, a tool the target does not declare), else 0.
func (b *builder) takeStub(journalName, name string) int {
	if b.t.API != Anthropic || b.declared[journalName] || b.stubs[journalName] {
		return 0
	}
	b.stubs[journalName] = true
	return b.toolTokens([]Tool{stubTool(name)})
}

// result decodes the result paired with c, or makes the synthetic one.
func (b *builder) result(c callRef) Result {
	r := Result{CallID: b.callID(&c), Name: b.wireName(b.seg.callName(&c))}
	var tr journal.ToolResult
	if c.result < 0 {
		r.Content, r.IsError, r.Synthetic = SyntheticResult, true, true
	} else if b.decode(c.result, &tr) {
		r.Content, r.IsError = userText(tr.Content, tr.Attachments), tr.IsError
		b.report.Attachments += len(tr.Attachments)
		if b.blank(r.Content) {
			// The block stays, without content: a tool_result is never
			// dropped.
			b.noteBlank(c.result, BlankToolResult, r.CallID)
			r.Content = ""
		}
	} else {
		r.Content, r.IsError = "tool result unreadable: malformed journal event", true
	}
	r.tokens = b.cnt.count(r.Content) + perResult
	return r
}

// callID reads a call's ID from its body, as segmentation read it.
func (b *builder) callID(c *callRef) string {
	h, _ := readHeader(journal.KindToolCall, b.src.body(c.event))
	s, _ := rawString(h.callID)
	return s
}

// stubTokens is the framing of one tool declaration.
const stubTokens = 16

// StubDescription is the description of a tool declared only because the
// history used it and the target's tool set no longer has it.
const StubDescription = "This tool is no longer available; it appears only in earlier messages."

// stubTool is the declaration of a tool the history used that the target
// no longer offers (Anthropic rejects tool blocks of undeclared tools).
func stubTool(name string) Tool {
	return Tool{Name: name, Description: StubDescription, Parameters: []byte(`{"type":"object"}`)}
}

// stepTokens is the base token cost of a step.
func stepTokens(st *Step) int {
	n := perMessage
	for i := range st.Parts {
		n += st.Parts[i].tokens
	}
	if len(st.Results) > 0 {
		n += perMessage
	}
	for i := range st.Results {
		n += st.Results[i].tokens
	}
	return n
}
