package render

import (
	"fmt"
	"io"
	"strings"
)

// Report says what a render did to the journal to make a valid request.
// It is deterministic like the request itself.
type Report struct {
	API      API    `json:"api"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Events is the number of journal events rendered from.
	Events int `json:"events"`
	// KeptUnits and DroppedUnits count the conversation units (user turns,
	// assistant steps with their results) inside and outside the window.
	KeptUnits    int `json:"kept_units"`
	DroppedUnits int `json:"dropped_units"`
	// KeptEvents and DroppedEvents are the numbers of events in the kept
	// and the dropped units.
	KeptEvents    int `json:"kept_events"`
	DroppedEvents int `json:"dropped_events"`
	// Digest is the text that stands in for the dropped units.
	Digest string `json:"digest,omitempty"`
	// WorkingMemory is the size in bytes of the working memory pinned
	// after the instructions (0: no block; Target.WorkingMemory).
	WorkingMemory int `json:"working_memory,omitempty"`
	// Synthesized lists the calls that got an error result because the
	// journal holds none.
	Synthesized []CallNote `json:"synthesized,omitempty"`
	// Orphans lists call IDs of results that had no call to answer; they
	// are not sent. Duplicates lists second results for one call.
	Orphans    []string `json:"orphans,omitempty"`
	Duplicates []string `json:"duplicates,omitempty"`
	// Remapped lists call IDs rewritten into the target's ID syntax.
	Remapped []IDMapping `json:"remapped,omitempty"`
	// Truncated lists tool results (and user texts) cut to fit the window.
	Truncated []Truncation `json:"truncated,omitempty"`
	// ReasoningKept counts reasoning events replayed to their own model;
	// ReasoningDropped those not sent (other producer, not replayable on
	// this API, or in a position the API forbids).
	ReasoningKept    int `json:"reasoning_kept"`
	ReasoningDropped int `json:"reasoning_dropped"`
	// ThinkingDisabled is set when thinking was turned off for this
	// request because the open turn (or its last exchange) has no
	// thinking of the model to lead it.
	ThinkingDisabled bool `json:"thinking_disabled,omitempty"`
	// Textualized lists call IDs of steps rendered as user-side text.
	Textualized []string `json:"textualized,omitempty"`
	// ToolNames lists the tool names the API refuses, each with the name
	// it goes by in the request (in order of first use: the target's
	// tools, then the calls). A call the model makes by the request name
	// is journaled under the journal name (JournalToolName).
	ToolNames []NameMapping `json:"tool_names,omitempty"`
	// StubbedTools lists tools declared only because history used them,
	// by their journal names.
	StubbedTools []string `json:"stubbed_tools,omitempty"`
	// Whitespace lists the texts changed because the API refuses text
	// blocks that hold only whitespace, and a final assistant message that
	// ends with whitespace (Anthropic), in journal order.
	Whitespace []WhitespaceNote `json:"whitespace,omitempty"`
	// Placeholders counts dummy thought signatures put on foreign calls.
	Placeholders int `json:"placeholder_signatures,omitempty"`
	// Malformed lists indices (0-based, in the given order) of events whose
	// body could not be read; UnknownKinds counts events of kinds this
	// release does not know. Neither is sent.
	Malformed    []int `json:"malformed,omitempty"`
	UnknownKinds int   `json:"unknown_kinds,omitempty"`
	// Attachments counts attachments sent as a text note instead of bytes.
	Attachments int `json:"attachments,omitempty"`
	// Tokens is the estimate.
	Tokens Estimate `json:"tokens"`
}

// CallNote names one call.
type CallNote struct {
	CallID string `json:"call_id"`
	Name   string `json:"name"`
}

// NameMapping is one tool name rewritten into the target's syntax.
type NameMapping struct {
	From string `json:"from"` // as journaled, and as the target's tool set names it
	To   string `json:"to"`   // in the request
}

// JournalToolName returns the journal's name of a tool the model called
// by name, the request's name: the inverse of the mapping in ToolNames.
func (r *Report) JournalToolName(name string) string {
	for _, m := range r.ToolNames {
		if m.To == name {
			return m.From
		}
	}
	return name
}

// JournalCallID returns the journal's ID of a call known to the model by
// id, the request's ID: the inverse of the mapping in Remapped.
func (r *Report) JournalCallID(id string) string {
	for _, m := range r.Remapped {
		if m.To == id {
			return m.From
		}
	}
	return id
}

// WhitespaceNote is one text dropped or trimmed for an API that refuses
// whitespace-only text blocks.
type WhitespaceNote struct {
	// Event is the index (0-based, in the given order) of the event that
	// holds the text.
	Event int `json:"event"`
	// What is one of the Blank and TrailingWhitespace constants.
	What string `json:"what"`
	// CallID names the call of a tool result, as journaled.
	CallID string `json:"call_id,omitempty"`
}

// What a WhitespaceNote says was done. A tool_result block is never
// dropped: only its whitespace content is.
const (
	BlankUserText      = "whitespace-only user text not sent"
	BlankInstruction   = "whitespace-only instruction not sent"
	BlankAssistantText = "whitespace-only assistant text not sent"
	BlankToolResult    = "whitespace-only tool result content not sent"
	TrailingWhitespace = "trailing whitespace trimmed from the final assistant text"
)

// IDMapping is one rewritten call ID.
type IDMapping struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Truncation is one text cut to fit the window.
type Truncation struct {
	CallID string `json:"call_id,omitempty"` // empty for a user text
	From   int    `json:"from_tokens"`
	To     int    `json:"to_tokens"`
}

// Estimate is the token estimate of a request.
type Estimate struct {
	// Tokenizer is the encoding that counted the text.
	Tokenizer string `json:"tokenizer"`
	// Exact is true when Tokenizer is the model's own (OpenAI models);
	// the framing of messages is estimated either way.
	Exact bool `json:"exact"`
	// Factor is the safety factor k; Calibration the number of usage
	// events it was derived from (0: the default).
	Factor      float64 `json:"factor"`
	Calibration int     `json:"calibration_events"`
	// Base is the count before the factor; record it as
	// journal.Usage.EstimatedTokens beside what the provider reports, so
	// later renders calibrate.
	Base int `json:"base"`
	// Estimated is ceil(Factor * Base); Budget is the window it must fit.
	Estimated int `json:"estimated"`
	Budget    int `json:"budget"`
	// OverBudget is set when even the instructions, tools and the newest
	// unit truncated to its minimum do not fit.
	OverBudget bool `json:"over_budget,omitempty"`
}

// WriteText prints the report for people, one fact per line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "target: %s %s/%s\n", r.API, r.Provider, r.Model)
	fmt.Fprintf(&b, "events: %d; units kept %d (%d events), dropped %d (%d events)\n", r.Events, r.KeptUnits, r.KeptEvents, r.DroppedUnits, r.DroppedEvents)
	if r.Digest != "" {
		fmt.Fprintf(&b, "digest: %s\n", r.Digest)
	}
	if r.WorkingMemory > 0 {
		fmt.Fprintf(&b, "working memory: %d bytes, pinned after the instructions\n", r.WorkingMemory)
	}
	for _, s := range r.Synthesized {
		fmt.Fprintf(&b, "synthesized error result: %s (%s)\n", s.CallID, s.Name)
	}
	for _, id := range r.Orphans {
		fmt.Fprintf(&b, "dropped orphan result: %s\n", id)
	}
	for _, id := range r.Duplicates {
		fmt.Fprintf(&b, "dropped duplicate result: %s\n", id)
	}
	for _, m := range r.Remapped {
		fmt.Fprintf(&b, "remapped call id: %s -> %s\n", m.From, m.To)
	}
	for _, t := range r.Truncated {
		fmt.Fprintf(&b, "truncated %s: %d -> %d tokens\n", orUser(t.CallID), t.From, t.To)
	}
	fmt.Fprintf(&b, "reasoning: %d replayed, %d not sent\n", r.ReasoningKept, r.ReasoningDropped)
	if r.ThinkingDisabled {
		b.WriteString("thinking: disabled for this request (the open turn does not start with thinking of this model)\n")
	}
	for _, id := range r.Textualized {
		fmt.Fprintf(&b, "rendered as text: call %s\n", id)
	}
	for _, m := range r.ToolNames {
		fmt.Fprintf(&b, "tool name: %s -> %s\n", m.From, m.To)
	}
	for _, n := range r.StubbedTools {
		fmt.Fprintf(&b, "stub tool declared: %s\n", n)
	}
	for _, n := range r.Whitespace {
		fmt.Fprintf(&b, "whitespace: event %d: %s%s\n", n.Event, n.What, callSuffix(n.CallID))
	}
	if r.Placeholders > 0 {
		fmt.Fprintf(&b, "placeholder thought signatures: %d\n", r.Placeholders)
	}
	if len(r.Malformed) > 0 || r.UnknownKinds > 0 {
		fmt.Fprintf(&b, "skipped: %d malformed, %d of unknown kind\n", len(r.Malformed), r.UnknownKinds)
	}
	if r.Attachments > 0 {
		fmt.Fprintf(&b, "attachments sent as notes: %d\n", r.Attachments)
	}
	t := r.Tokens
	exact := "estimate"
	if t.Exact {
		exact = "exact text"
	}
	fmt.Fprintf(&b, "tokens: %d estimated (%d base x %.3f, %s %s, %d usage events) of %d budget\n",
		t.Estimated, t.Base, t.Factor, t.Tokenizer, exact, t.Calibration, t.Budget)
	if t.OverBudget {
		b.WriteString("over budget: instructions, tools and the newest unit do not fit\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func callSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " (call " + id + ")"
}

func orUser(id string) string {
	if id == "" {
		return "user text"
	}
	return "result " + id
}

// counters is a snapshot of what building one unit adds to a report.
type counters struct {
	kept, dropped, attachments, synthesized, malformed, truncated, whitespace int
}

func (r *Report) counters() counters {
	return counters{r.ReasoningKept, r.ReasoningDropped, r.Attachments, len(r.Synthesized), len(r.Malformed), len(r.Truncated), len(r.Whitespace)}
}

// restore forgets what was added since the snapshot c.
func (r *Report) restore(c counters) {
	r.ReasoningKept, r.ReasoningDropped, r.Attachments = c.kept, c.dropped, c.attachments
	r.Synthesized = r.Synthesized[len(r.Synthesized)-c.synthesized:]
	r.Malformed = r.Malformed[:c.malformed]
	r.Truncated = r.Truncated[:c.truncated]
	r.Whitespace = r.Whitespace[:c.whitespace]
}
