package compat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentcapsule/capsule/journal"
)

// The journal kinds compat reads (FORMAT §7.5, §11.7.3).
const (
	kindToolCall        = "tool_call"
	kindToolResult      = "tool_result"
	kindUsage           = "usage"
	kindToolDispatch    = "tool_dispatch"
	kindApprovalRequest = "approval_request"
	kindApproval        = "approval"
	kindEffectOutcome   = "effect_outcome"
	kindToolMapping     = "tool_mapping"
)

// v2Kinds are the kinds journal version 2 adds; a version-1 line of one of
// them grants nothing (FORMAT §11.6).
var v2Kinds = map[string]bool{kindToolDispatch: true, kindApprovalRequest: true, kindApproval: true, kindEffectOutcome: true, kindToolMapping: true}

// call is what the journal says of one tool call, by call id.
type call struct {
	id         string
	name       string // from tool_call, else from an approval_request
	v          int    // the version of the tool_call line
	callEvent  string
	result     string
	dispatches []dispatch
	requests   []request
	approvals  []decision
}

type dispatch struct{ event, effect string }

type request struct{ event, name, specDigest string }

type decision struct{ event, request, decision string }

// usage is one usage event and its token count.
type usage struct {
	event  string
	tokens int64
}

// mapping is a tool_mapping event.
type mapping struct{ event, from, to string }

// history is what compat reads of a journal: the calls in the order they
// first appear, usage, journaled mappings, and the highest and lowest
// envelope versions.
type history struct {
	calls        []*call
	byID         map[string]*call
	usage        []usage
	mappings     []mapping
	events       int
	minV, maxV   int
	v1Authority  []string // ids of version-1 lines of a version-2 kind
	parseProblem error
}

func (h *history) get(id string) *call {
	if c, ok := h.byID[id]; ok {
		return c
	}
	c := &call{id: id}
	h.byID[id] = c
	h.calls = append(h.calls, c)
	return c
}

// readHistory reads the journal r. A line that does not parse stops it; the
// problem is kept in parseProblem and what came before is returned.
func readHistory(r io.Reader) *history {
	h := &history{byID: map[string]*call{}}
	if r == nil {
		return h
	}
	err := journal.Each(r, func(e *journal.Event, _ journal.Pos) error {
		h.events++
		if h.minV == 0 || e.V < h.minV {
			h.minV = e.V
		}
		h.maxV = max(h.maxV, e.V)
		return h.add(e)
	})
	var kv *journal.KindVersionError
	if errors.As(err, &kv) && kv.V == 1 {
		h.v1Authority = append(h.v1Authority, kv.ID) // the reader refuses it; report the event
		h.events++
		h.minV = 1
		return h
	}
	h.parseProblem = err
	return h
}

// body holds the members of every body kind compat reads.
type body struct {
	CallID       string `json:"call_id"`
	Name         string `json:"name"`
	Effect       string `json:"effect"`
	SpecDigest   string `json:"spec_digest"`
	Request      string `json:"request"`
	Decision     string `json:"decision"`
	From         string `json:"from"`
	To           string `json:"to"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
}

func (h *history) add(e *journal.Event) error {
	k := string(e.Kind)
	switch k {
	case kindToolCall, kindToolResult, kindUsage, kindToolDispatch, kindApprovalRequest, kindApproval, kindToolMapping:
	default:
		return nil
	}
	var b body
	if err := json.Unmarshal(e.Body, &b); err != nil {
		return fmt.Errorf("compat: event %s (%s): %w", e.ID, k, err)
	}
	switch k {
	case kindUsage:
		h.usage = append(h.usage, usage{event: e.ID, tokens: b.InputTokens + b.OutputTokens})
	case kindToolMapping:
		h.mappings = append(h.mappings, mapping{event: e.ID, from: b.From, to: b.To})
	default:
		h.addCall(e.ID, k, e.V, b)
	}
	return nil
}

func (h *history) addCall(id, k string, v int, b body) {
	c := h.get(b.CallID)
	switch k {
	case kindToolCall:
		c.name, c.callEvent, c.v = b.Name, id, v
	case kindToolResult:
		c.result = id
	case kindToolDispatch:
		c.dispatches = append(c.dispatches, dispatch{event: id, effect: b.Effect})
	case kindApprovalRequest:
		c.requests = append(c.requests, request{event: id, name: b.Name, specDigest: b.SpecDigest})
		if c.name == "" {
			c.name = b.Name
		}
	case kindApproval:
		c.approvals = append(c.approvals, decision{event: id, request: b.Request, decision: b.Decision})
	}
}

// decided returns the request of the call's latest approval or denial that
// answers one of its requests, and that decision, or "" when none does.
func (c *call) decided() (request, string, string) {
	for i := len(c.approvals) - 1; i >= 0; i-- {
		a := c.approvals[i]
		for _, r := range c.requests {
			if r.event == a.request {
				return r, a.decision, a.event
			}
		}
	}
	return request{}, "", ""
}

// ran reports whether the call's tool ran: a dispatch, or a result that is
// not the answer to a denial (before journal version 2 a result is the only
// sign that it ran).
func (c *call) ran() bool {
	if len(c.dispatches) > 0 {
		return true
	}
	_, d, _ := c.decided()
	return c.result != "" && d != "denied"
}

// ranEvent is the event that shows the call ran.
func (c *call) ranEvent() string {
	if len(c.dispatches) > 0 {
		return c.dispatches[0].event
	}
	return c.result
}
