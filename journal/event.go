// Package journal owns the agent's history: provider-neutral events, one per
// line of memory/timeline_events.jsonl, chained per machine by hash, ordered
// by a Lamport clock, and merged across copies by set union.
//
// The event types here are pure data: they never name a vendor's wire format.
// The package is pure (no os, net, time or math/rand): it parses and checks
// lines (ParseLine, Decode, Scan, Check, Verify, VerifyTail), streams a
// journal of any length in bounded memory (Each, EachWith, ScanText, with a
// step on the parsing goroutines), builds chains (Writer, Seal, Encode),
// summarizes a journal for the manifest (Summarize) and merges copies
// (Merge in memory, MergeTo as they stream by). Durable appends to the file live in
// journal/logfile. Any package may import it. The format is docs/FORMAT.md
// §7; tests cite its sections.
package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SchemaVersion is the version of the event envelope and bodies this release
// writes: every event it appends carries it in v, after older lines in the
// same file (docs/FORMAT.md §11.6). Lines from FloorVersion up are read.
const SchemaVersion = 2

// Kind names what an event records.
type Kind string

// The kinds of event. A reader MUST preserve events of a kind it does not
// know, byte for byte: a newer release may have written them.
const (
	KindInstruction Kind = "instruction"  // system or developer text
	KindUser        Kind = "user"         // a user message
	KindAssistant   Kind = "assistant"    // assistant text
	KindReasoning   Kind = "reasoning"    // private reasoning, always with its producer
	KindToolCall    Kind = "tool_call"    // the model asked for a tool
	KindToolResult  Kind = "tool_result"  // the tool's answer
	KindModelChange Kind = "model_change" // the agent switched provider, API or model
	KindUsage       Kind = "usage"        // token usage a provider reported for one request
	KindFrozen      Kind = "frozen"       // lifecycle: the agent stopped at a step boundary
	KindResumed     Kind = "resumed"      // lifecycle: the agent runs again
	KindMoved       Kind = "moved"        // lifecycle: a move committed
	KindEpoch       Kind = "epoch"        // lifecycle: a new holder epoch began
)

// KnownKinds lists the kinds this release understands, in a fixed order.
var KnownKinds = []Kind{
	KindInstruction, KindUser, KindAssistant, KindReasoning, KindToolCall,
	KindToolResult, KindModelChange, KindUsage, KindFrozen, KindResumed,
	KindMoved, KindEpoch, KindToolDispatch, KindApprovalRequest, KindApproval, KindEffectOutcome,
}

// Known reports whether k is a kind this release understands.
func (k Kind) Known() bool {
	for _, x := range KnownKinds {
		if x == k {
			return true
		}
	}
	return false
}

// Event is one line of the journal. See docs/FORMAT.md, "The journal".
//
// ID is "sha256:<hex>" of the RFC 8785 canonical JSON of the event without
// its "id" member. Prev is the ID of the same machine's previous event, empty
// for its first. Time is informational only and never used for ordering.
// Body is canonical JSON. Code that changes a field must call Seal again.
type Event struct {
	ID      string          `json:"id"`
	Machine string          `json:"machine"`
	Seq     uint64          `json:"seq"`
	Prev    string          `json:"prev,omitempty"`
	Clock   uint64          `json:"clock"`
	Epoch   uint64          `json:"epoch"`
	V       int             `json:"v"`
	Time    string          `json:"time,omitempty"`
	Kind    Kind            `json:"kind"`
	Body    json.RawMessage `json:"body"`

	// Raw holds the line exactly as read when it carries something this
	// release cannot represent in the fields above (an unknown kind, a newer
	// envelope version, an unknown envelope member). Encode re-emits it byte
	// for byte, so such events are never dropped or rewritten. It is nil for
	// every event this release can re-encode from its fields.
	Raw []byte `json:"-"`
}

// Producer names the model that produced an assistant-side event.
// Provider is e.g. "openai", "anthropic", "google", "ollama"; API is e.g.
// "chat", "responses", "messages", "generateContent"; Model is the provider's
// model name.
type Producer struct {
	Provider string `json:"provider"`
	API      string `json:"api"`
	Model    string `json:"model"`
}

// Instruction is the body of KindInstruction. Role is "system" or "developer".
type Instruction struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Attachment references a blob of the capsule (artifacts/blobs/<hex>).
type Attachment struct {
	Blob      string `json:"blob"` // a digest, "sha256:<hex>"
	MediaType string `json:"media_type"`
	Name      string `json:"name,omitempty"`
	Size      int64  `json:"size"`
}

// UserMessage is the body of KindUser.
type UserMessage struct {
	Text        string       `json:"text"`
	Attachments []Attachment `json:"attachments,omitempty"`
}

// AssistantMessage is the body of KindAssistant.
//
// Step groups the events of one model generation (reasoning, text and calls
// share it). ItemID is an opaque provider item ID (an OpenAI Responses "msg_"
// ID) and Signature an opaque signature the provider attached (a Gemini
// thought signature, base64); both are replayed only to the producing model.
type AssistantMessage struct {
	Text       string   `json:"text"`
	Producer   Producer `json:"producer"`
	Step       string   `json:"step,omitempty"`
	StopReason string   `json:"stop_reason,omitempty"`
	ItemID     string   `json:"item_id,omitempty"`
	Signature  string   `json:"signature,omitempty"`
}

// Reasoning is the body of KindReasoning: private reasoning, replayed only to
// the model that produced it.
//
// Text is readable reasoning (Anthropic thinking, a Responses summary, Gemini
// thought text). Signature is the signature that authenticates Text
// (Anthropic). Encrypted is opaque content (Anthropic redacted_thinking data,
// Responses encrypted_content). ItemID is the provider's reasoning item ID
// (Responses "rs_"). Summary holds Responses summary parts.
type Reasoning struct {
	Producer  Producer `json:"producer"`
	Step      string   `json:"step,omitempty"`
	Text      string   `json:"text,omitempty"`
	Signature string   `json:"signature,omitempty"`
	Encrypted string   `json:"encrypted,omitempty"`
	Redacted  bool     `json:"redacted,omitempty"`
	ItemID    string   `json:"item_id,omitempty"`
	Summary   []string `json:"summary,omitempty"`
}

// ToolCall is the body of KindToolCall.
//
// Arguments is the JSON the model produced. When the model produced text that
// is not valid JSON, Arguments is absent and RawArguments holds the text
// verbatim. ItemID and Signature are as for AssistantMessage.
type ToolCall struct {
	CallID       string          `json:"call_id"`
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	RawArguments string          `json:"raw_arguments,omitempty"`
	Producer     Producer        `json:"producer"`
	Step         string          `json:"step,omitempty"`
	ItemID       string          `json:"item_id,omitempty"`
	Signature    string          `json:"signature,omitempty"`
}

// ToolResult is the body of KindToolResult. Interrupted marks the
// explicit error result of a call a crash or a move cut (the tool is never
// run again); Outcome is OutcomeUnknown when that call was an external
// one already dispatched (FORMAT §11.7.3).
type ToolResult struct {
	CallID      string       `json:"call_id"`
	Name        string       `json:"name,omitempty"`
	Content     string       `json:"content"`
	IsError     bool         `json:"is_error,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"`
	Outcome     string       `json:"outcome,omitempty"`
}

// ModelChange is the body of KindModelChange: the model the agent uses from here on.
type ModelChange struct {
	Provider string `json:"provider"`
	API      string `json:"api"`
	Model    string `json:"model"`
}

// Usage is the body of KindUsage: what a provider reported for one request,
// beside the offline estimate made for it, so the estimator can be calibrated.
type Usage struct {
	Producer        Producer `json:"producer"`
	InputTokens     int64    `json:"input_tokens"`
	OutputTokens    int64    `json:"output_tokens"`
	EstimatedTokens int64    `json:"estimated_tokens,omitempty"`
}

// Frozen is the body of KindFrozen.
type Frozen struct {
	Reason string `json:"reason"`
}

// Resumed is the body of KindResumed.
type Resumed struct {
	Reason string `json:"reason,omitempty"`
}

// Moved is the body of KindMoved.
type Moved struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Epoch uint64 `json:"epoch"`
}

// EpochStart is the body of KindEpoch.
type EpochStart struct {
	Epoch  uint64 `json:"epoch"`
	Holder string `json:"holder"`
}

// attachmentsKey is how an attachments member starts in a canonical body.
var attachmentsKey = []byte(`"attachments":`)

// LineAttachments returns the ID of the event an encoded journal line
// (without its newline) holds and the attachments it names, parsing the
// line only when it mentions attachments at all: a scan of a long journal
// for its attachment blobs costs a substring search per line.
func LineAttachments(line []byte) (string, []Attachment, error) {
	if !bytes.Contains(line, attachmentsKey) {
		return "", nil, nil
	}
	e, err := ParseLine(line)
	if err != nil {
		return "", nil, err
	}
	as, err := Attachments(e)
	return e.ID, as, err
}

// Attachments returns the attachments an event's body names (user
// messages and tool results carry them), nil for any other event. The
// blobs they name belong to the capsule as much as the workspace's do: a
// copy of the capsule that lacks one has lost part of the conversation.
func Attachments(e Event) ([]Attachment, error) {
	if e.Kind != KindUser && e.Kind != KindToolResult || !bytes.Contains(e.Body, attachmentsKey) {
		return nil, nil
	}
	var b struct {
		Attachments []Attachment `json:"attachments"`
	}
	if err := json.Unmarshal(e.Body, &b); err != nil {
		return nil, fmt.Errorf("journal: event %s: attachments: %w", e.ID, err)
	}
	return b.Attachments, nil
}
