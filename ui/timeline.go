package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/journal"
)

// item is one journal event as the timeline shows it.
type item struct {
	Index    int    // position in the journal, file order
	Kind     string // the journal's kind
	Machine  string // the machine that journaled it, shortened
	Epoch    uint64
	Time     string
	Producer string // the model that produced it, for assistant-side events
	Text     string
	Args     string // a tool call's arguments, indented
	Call     string // a tool call's ID
	Tool     string
	Error    bool // a tool result that is an error, a denial
	Fold     bool // reasoning: folded under its producer
	Note     string
}

func producer(p journal.Producer) string {
	return strings.TrimSpace(p.Provider + " " + p.API + " " + p.Model)
}

func shortID(s string) string {
	if len(s) > 10 {
		return s[:10] + "…"
	}
	return s
}

// itemOf describes e, the index-th event of the journal.
func itemOf(index int, e journal.Event) item {
	it := item{Index: index, Kind: string(e.Kind), Machine: shortID(e.Machine), Epoch: e.Epoch, Time: e.Time}
	if err := describe(&it, e); err != nil {
		it.Note = fmt.Sprintf("(body not read: %v)", err)
		it.Text = string(e.Body)
	}
	return it
}

// describe fills it from e's body, by kind.
func describe(it *item, e journal.Event) error {
	switch e.Kind {
	case journal.KindInstruction:
		var b journal.Instruction
		return into(e, &b, func() { it.Note, it.Text = b.Role, b.Text })
	case journal.KindUser:
		var b journal.UserMessage
		return into(e, &b, func() { it.Text = b.Text })
	case journal.KindAssistant:
		var b journal.AssistantMessage
		return into(e, &b, func() { it.Text, it.Producer = b.Text, producer(b.Producer) })
	case journal.KindReasoning:
		var b journal.Reasoning
		return into(e, &b, func() { it.reasoning(b) })
	case journal.KindToolCall:
		var b journal.ToolCall
		return into(e, &b, func() { it.toolCall(b) })
	case journal.KindToolResult:
		var b journal.ToolResult
		return into(e, &b, func() { it.toolResult(b) })
	case journal.KindModelChange:
		var b journal.ModelChange
		return into(e, &b, func() { it.Text = strings.TrimSpace(b.Provider + " " + b.API + " " + b.Model) })
	default:
		return describeMore(it, e)
	}
}

// describeMore fills it for the lifecycle and approval kinds.
func describeMore(it *item, e journal.Event) error {
	switch e.Kind {
	case journal.KindUsage:
		var b journal.Usage
		return into(e, &b, func() {
			it.Producer, it.Text = producer(b.Producer), fmt.Sprintf("%d tokens in, %d out", b.InputTokens, b.OutputTokens)
		})
	case journal.KindFrozen:
		var b journal.Frozen
		return into(e, &b, func() { it.Text = b.Reason })
	case journal.KindResumed:
		var b journal.Resumed
		return into(e, &b, func() { it.Text = b.Reason })
	case journal.KindMoved:
		var b journal.Moved
		return into(e, &b, func() { it.Text = fmt.Sprintf("from %s to %s at epoch %d", b.From, b.To, b.Epoch) })
	case journal.KindEpoch:
		var b journal.EpochStart
		return into(e, &b, func() { it.Text = fmt.Sprintf("epoch %d, holder %s", b.Epoch, b.Holder) })
	case journal.KindApprovalRequest:
		var b journal.ApprovalRequest
		return into(e, &b, func() { it.Call, it.Tool, it.Text, it.Note = b.CallID, b.Name, b.ArgumentsDigest, b.Rule })
	case journal.KindApproval:
		var b journal.Approval
		return into(e, &b, func() {
			it.Call, it.Text, it.Note, it.Error = b.CallID, b.Decision+" by "+b.By, b.Reason, b.Decision != "approved"
		})
	case journal.KindToolDispatch:
		var b journal.ToolDispatch
		return into(e, &b, func() { it.Call, it.Text = b.CallID, b.Effect })
	case journal.KindEffectOutcome:
		var b journal.EffectOutcome
		return into(e, &b, func() { it.Call, it.Text, it.Note = b.CallID, b.Outcome+" by "+b.By, b.Note })
	}
	it.Text = string(e.Body) // a kind of a newer release: shown as it is
	return nil
}

func into(e journal.Event, v any, fill func()) error {
	if err := json.Unmarshal(e.Body, v); err != nil {
		return err
	}
	fill()
	return nil
}

func (it *item) reasoning(b journal.Reasoning) {
	it.Producer, it.Fold = producer(b.Producer), true
	it.Text = b.Text
	if it.Text == "" {
		it.Text = strings.Join(b.Summary, "\n")
	}
	if it.Text == "" && (b.Encrypted != "" || b.Redacted) {
		it.Note = "encrypted or redacted: replayed only to its producer"
	}
}

func (it *item) toolCall(b journal.ToolCall) {
	it.Call, it.Tool, it.Producer = b.CallID, b.Name, producer(b.Producer)
	if len(b.Arguments) == 0 {
		it.Args = b.RawArguments
		return
	}
	var buf bytes.Buffer
	if json.Indent(&buf, b.Arguments, "", "  ") == nil {
		it.Args = buf.String()
	} else {
		it.Args = string(b.Arguments)
	}
}

func (it *item) toolResult(b journal.ToolResult) {
	it.Call, it.Tool, it.Text, it.Error = b.CallID, b.Name, b.Content, b.IsError
	if b.Interrupted {
		it.Note = "interrupted, outcome " + b.Outcome
	}
}
