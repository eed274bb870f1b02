package render

import (
	"encoding/json"

	"github.com/agentcapsule/capsule/journal"
)

// Plan is a journal made ready for one target: repaired, filtered, fitted
// to the window and with IDs mapped, but not yet in any wire format. The
// provider packages turn a Plan into a request, mechanically; every
// decision that the rules of §1 and §6 of the rendering reference call
// for is taken here, once, for all providers.
type Plan struct {
	Target Target
	Caps   Caps
	// Items is the conversation in order. It starts with the instructions
	// that precede everything else (the system slot of APIs that have one).
	Items []Item
	// Tools are the tools to declare: the target's own, then stubs for
	// tools the kept history used that the target no longer offers, where
	// the API requires them (Anthropic), each under its request name.
	Tools []Tool
	// Thinking is whether extended thinking is enabled for this request.
	Thinking bool
	// Report says what the render dropped, synthesized, remapped or
	// truncated, and the token estimate.
	Report Report
}

// ItemKind says what an Item is.
type ItemKind uint8

// The kinds of item.
const (
	ItemInstruction ItemKind = iota // a system or developer instruction
	ItemUser                        // a user-side text message
	ItemStep                        // one assistant generation, with its tool results
)

// Item is one element of the conversation.
type Item struct {
	Kind ItemKind
	// Role is "system" or "developer" for an instruction, as journaled.
	Role string
	// Text is the instruction or user text (attachments appear as notes).
	Text string
	// Synthetic says why the renderer made an item the journal does not
	// hold: "digest" (what the window dropped), "start" (a conversation
	// must open with a user turn), "textual" (a step rendered as text) or
	// "memory" (the working memory's instruction, Target.WorkingMemory).
	Synthetic string
	// Step is set for ItemStep.
	Step   *Step
	tokens int
}

// Step is one assistant generation: its parts in journal order, then one
// result per call, in call order.
type Step struct {
	Producer journal.Producer
	// Own is true when the producer is the target model: only then do
	// reasoning, signatures and provider item IDs survive.
	Own     bool
	Parts   []Part
	Results []Result
}

// Calls returns the step's calls in order.
func (s *Step) Calls() []*Call {
	var out []*Call
	for i := range s.Parts {
		if s.Parts[i].Kind == PartCall {
			out = append(out, &s.Parts[i].Call)
		}
	}
	return out
}

// PartKind says what a Part is.
type PartKind uint8

// The kinds of part.
const (
	PartText      PartKind = iota // assistant text
	PartReasoning                 // the target model's own reasoning, replayable
	PartCall                      // a tool call
)

// Part is one piece of a step. Signature and ItemID survive only on the
// target model's own parts.
type Part struct {
	Kind PartKind
	// Text is the assistant text, or the readable reasoning.
	Text string
	// Signature is an opaque signature: an Anthropic thinking signature on
	// reasoning, a Gemini thought signature (base64) on text, reasoning or
	// calls.
	Signature string
	// ItemID is a provider item ID (Responses "rs_", "msg_", "fc_"); set
	// only where the API needs it replayed.
	ItemID string
	// Encrypted is opaque reasoning (Responses encrypted_content, or
	// Anthropic redacted_thinking data when Redacted).
	Encrypted string
	Redacted  bool
	// Summary holds Responses reasoning summary texts.
	Summary []string
	// Call is set for PartCall.
	Call   Call
	tokens int
	stub   int   // reserved cost of a stub declaration this call needs
	event  int32 // the journal event of a text part
}

// Call is a tool call as the target will see it.
type Call struct {
	// ID is the call ID in the target's syntax (see Report.Remapped).
	ID string
	// JournalID is the call ID as journaled.
	JournalID string
	// Name is the tool's name in the target's syntax (see
	// Report.ToolNames); JournalName is the name as journaled.
	Name        string
	JournalName string
	// Arguments is the call's arguments as a JSON object, for APIs that
	// take an object. Invalid or non-object arguments become
	// {"_raw": "<text>"}.
	Arguments json.RawMessage
	// ArgumentsText is the text of Arguments, for APIs that take a JSON
	// string: a JSON object exactly as journaled, else the {"_raw"} object
	// ("{}" when there were none).
	ArgumentsText string
}

// Result is the result of one call.
type Result struct {
	// CallID is the mapped ID of the call it answers.
	CallID string
	// Name is the tool's name in the target's syntax.
	Name    string
	Content string
	IsError bool
	// Synthetic is set for the error result made for a call that never
	// got one.
	Synthetic bool
	// Truncated is set when the content was cut to fit the window.
	Truncated bool
	tokens    int
}

// Leading returns how many items at the start of p.Items are
// instructions: the ones an API with a single system slot puts there.
func (p *Plan) Leading() int {
	n := 0
	for n < len(p.Items) && p.Items[n].Kind == ItemInstruction {
		n++
	}
	return n
}
