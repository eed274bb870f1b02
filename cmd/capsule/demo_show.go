package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node"
)

// console is the demo's output, shared by the transcript's watch and the
// demo's own lines: whole lines, and the assistant's text as it streams.
type console struct {
	mu  sync.Mutex
	w   io.Writer
	mid bool // a streamed line is open
}

// say prints one line, closing a streamed one first.
func (c *console) say(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLine()
	fmt.Fprintf(c.w, format+"\n", a...)
}

// part prints text on the open line, opening it with head if none is.
func (c *console) part(head, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mid {
		fmt.Fprint(c.w, head)
		c.mid = true
	}
	fmt.Fprint(c.w, text)
}

func (c *console) endLine() {
	if c.mid {
		fmt.Fprintln(c.w)
		c.mid = false
	}
}

// transcript shows an agent's watch stream, node after node, and counts
// what the demo waits for. Events are shown once, by (machine, seq): the
// second node's journal starts with the first node's events.
type transcript struct {
	out   *console
	label func(machine string) string // the node name of a machine ID

	mu       sync.Mutex
	seen     map[string]uint64 // machine -> highest seq shown
	calls    map[string]string // call ID -> tool name
	streamed map[string]bool   // steps whose text was shown as deltas
	results  int               // tool results shown
	answers  int               // assistant texts shown
	requests int               // approval requests shown
	moved    bool              // the first node said the agent moved
	err      error             // what ended a watch early
}

func newTranscript(out *console, label func(string) string) *transcript {
	return &transcript{out: out, label: label, seen: map[string]uint64{}, calls: map[string]string{}, streamed: map[string]bool{}}
}

// follow watches agent id on n (named name) until the returned stop is
// called; stop waits for the watch to end. With rewatch > 0 the watch is
// opened again every rewatch, from the count of journal lines it has
// shown: on the holder a move made, the node's live stream carries the
// deltas and states but not the journal events (the staged journal it
// runs on has no append hook), so they come as history instead.
func (tr *transcript) follow(ctx context.Context, n *node.Node, name, id string, rewatch time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		from := 0
		for ctx.Err() == nil {
			wctx, wcancel := context.WithCancel(ctx)
			if rewatch > 0 {
				wctx, wcancel = context.WithTimeout(ctx, rewatch)
			}
			err := n.WatchAgent(wctx, id, api.WatchOptions{From: from}, func(m api.WatchMessage) error {
				if m.Event != nil {
					from++
				}
				tr.show(name, m)
				return nil
			})
			wcancel()
			if err != nil && ctx.Err() == nil {
				tr.mu.Lock()
				tr.err = fmt.Errorf("demo: watch on %s: %w", name, err)
				tr.mu.Unlock()
				return
			}
			if rewatch <= 0 {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// counts returns the tool results and answers shown, and whether the
// agent was seen to move.
// approvalRequests returns how many approval requests the transcript showed.
func (tr *transcript) approvalRequests() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.requests
}

func (tr *transcript) counts() (results, answers int, moved bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.results, tr.answers, tr.moved
}

func (tr *transcript) show(name string, m api.WatchMessage) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := name + " │ "
	switch {
	case m.Delta != nil:
		tr.streamed[m.Delta.Step] = true
		tr.out.part(p+"assistant: ", m.Delta.Text)
	case m.State != nil:
		tr.state(p, *m.State)
	case m.Lagged:
		tr.out.say("%s(the watch fell behind; capsule agent log shows every event)", p)
	case m.Event != nil:
		e, err := m.JournalEvent()
		if err != nil {
			tr.out.say("%sunreadable event: %v", p, err)
			return
		}
		if e.Seq <= tr.seen[e.Machine] {
			return
		}
		tr.seen[e.Machine] = e.Seq
		tr.event(p, &e)
	}
}

func (tr *transcript) state(p string, s api.WatchState) {
	switch s.State {
	case api.StateRunning, api.WatchIdle, api.StateFrozen:
		return // the events say what it does
	case api.WatchMoved:
		tr.moved = true
	}
	if s.Reason != "" {
		tr.out.say("%s[%s: %s]", p, s.State, s.Reason)
		return
	}
	tr.out.say("%s[%s]", p, s.State)
}

// event prints one journal event on one line (prefix p).
func (tr *transcript) event(p string, e *journal.Event) {
	switch e.Kind {
	case journal.KindUser:
		tr.out.say("%suser: %s", p, decodeAs[journal.UserMessage](e.Body).Text)
	case journal.KindReasoning:
		tr.out.say("%s%s", p, reasoningLine(decodeAs[journal.Reasoning](e.Body)))
	case journal.KindToolCall:
		c := decodeAs[journal.ToolCall](e.Body)
		tr.calls[c.CallID] = c.Name
		tr.out.say("%s%s calls %s %s", p, producerName(c.Producer), c.Name, clipLine(string(c.Arguments)))
	case journal.KindToolResult:
		r := decodeAs[journal.ToolResult](e.Body)
		tr.results++
		first, _, _ := strings.Cut(strings.TrimSpace(r.Content), "\n")
		if r.IsError {
			first = "[error] " + first
		}
		tr.out.say("%s  %s returned: %s", p, tr.calls[r.CallID], clipLine(first))
	case journal.KindAssistant:
		tr.answers++
		a := decodeAs[journal.AssistantMessage](e.Body)
		if tr.streamed[a.Step] {
			tr.out.say("%s  (streamed by %s, now journaled)", p, producerName(a.Producer))
			return
		}
		tr.out.say("%s%s answers: %s", p, producerName(a.Producer), a.Text)
	case journal.KindModelChange:
		mc := decodeAs[journal.ModelChange](e.Body)
		tr.out.say("%smodel switched to %s/%s %s", p, mc.Provider, mc.API, mc.Model)
	case journal.KindMoved:
		mv := decodeAs[journal.Moved](e.Body)
		tr.out.say("%smoved: %s -> %s (epoch %d)", p, tr.label(mv.From), tr.label(mv.To), mv.Epoch)
	case journal.KindEpoch:
		ep := decodeAs[journal.EpochStart](e.Body)
		tr.out.say("%sepoch %d begins, held by %s", p, ep.Epoch, tr.label(ep.Holder))
	case journal.KindApprovalRequest, journal.KindApproval, journal.KindToolDispatch:
		if e.Kind == journal.KindApprovalRequest {
			tr.requests++
		}
		tr.out.say("%s%s", p, tr.effectLine(e))
	case journal.KindUsage:
	default:
		tr.out.say("%s%s: %s", p, e.Kind, summarize(e))
	}
}

func reasoningLine(r journal.Reasoning) string {
	var how []string
	if r.Signature != "" {
		how = append(how, "signed")
	}
	if r.Encrypted != "" {
		how = append(how, "encrypted")
	}
	text := r.Text
	if text == "" {
		text = strings.Join(r.Summary, " ")
	}
	tag := ""
	if len(how) > 0 {
		tag = " (" + strings.Join(how, ", ") + ")"
	}
	return fmt.Sprintf("%s thinks%s: %s", producerName(r.Producer), tag, clipLine(text))
}

func producerName(p journal.Producer) string { return p.Provider + "/" + p.API }

// decodeJSON is json.Unmarshal for the demo's figures; a body that does
// not decode counts as empty.
func decodeJSON(b []byte, v any) { _ = json.Unmarshal(b, v) }

// effectLine is one line for an approval request, an approval or a
// dispatch.
func (tr *transcript) effectLine(e *journal.Event) string {
	switch e.Kind {
	case journal.KindApprovalRequest:
		r := decodeAs[journal.ApprovalRequest](e.Body)
		return fmt.Sprintf("approval_request: call %s (%s) waits for a person's approval (arguments %s)", r.CallID, r.Name, r.ArgumentsDigest)
	case journal.KindApproval:
		a := decodeAs[journal.Approval](e.Body)
		line := fmt.Sprintf("approval: call %s %s by %s", a.CallID, a.Decision, a.By)
		if a.Reason != "" {
			line += ": " + a.Reason
		}
		return line
	}
	t := decodeAs[journal.ToolDispatch](e.Body)
	line := fmt.Sprintf("tool_dispatch: call %s (%s, effect %s) dispatched, synced before it runs", t.CallID, tr.calls[t.CallID], t.Effect)
	if t.Approval != "" {
		line += ", consuming approval " + shortDigest(t.Approval)
	}
	return line
}

// shortDigest cuts an event ID (a sha256 digest) to its first 12 hex digits.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12] + "…"
	}
	return d
}
