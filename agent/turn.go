package agent

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
)

// turn is what Decide reads of the open turn: the newest step's calls and
// the results, dispatches, approval requests and decisions that follow it.
type turn struct {
	step      string // the newest step
	haveStep  bool
	userAfter bool               // a user event after the newest step
	calls     []journal.ToolCall // the newest step's calls, oldest first
	results   map[string]bool
	steps     map[string]bool
	effects   map[string]*callEffects // by call ID
}

// callEffects is what the journal holds of one call of the newest step
// besides the call itself, each list oldest first.
type callEffects struct {
	count      int // tool_call events with the call ID in the step
	dispatches []dispatchEvent
	requests   []requestEvent
	approvals  []approvalEvent
}

type dispatchEvent struct {
	ID string
	journal.ToolDispatch
}

type requestEvent struct {
	ID string
	journal.ApprovalRequest
}

type approvalEvent struct {
	ID string
	journal.Approval
}

// of returns the effects of callID, made on first use.
func (t *turn) of(callID string) *callEffects {
	ce := t.effects[callID]
	if ce == nil {
		ce = &callEffects{}
		t.effects[callID] = ce
	}
	return ce
}

// request returns the newest approval request of the call and the
// decision that answers it (nil when there is none).
func (ce *callEffects) request() (*requestEvent, *approvalEvent) {
	if ce == nil || len(ce.requests) == 0 {
		return nil, nil
	}
	r := &ce.requests[len(ce.requests)-1]
	for i := range ce.approvals {
		if ce.approvals[i].Request == r.ID {
			return r, &ce.approvals[i]
		}
	}
	return r, nil
}

// consumer returns the dispatch that names approval id, if any.
func (t *turn) consumer(id string) *dispatchEvent {
	for _, ce := range t.effects {
		for i := range ce.dispatches {
			if ce.dispatches[i].Approval == id {
				return &ce.dispatches[i]
			}
		}
	}
	return nil
}

// scanTurn reads the journal from its end back to the newest user event
// before the newest step, so its cost is the length of the open turn.
func scanTurn(events []journal.Event) (*turn, error) {
	t := &turn{results: map[string]bool{}, steps: map[string]bool{}, effects: map[string]*callEffects{}}
	inStep := false
	var calls []journal.ToolCall // newest first
	for i := len(events) - 1; i >= 0; i-- {
		e := &events[i]
		if !conversational(e.Kind) {
			if !t.haveStep {
				if err := t.effect(e); err != nil {
					return nil, err
				}
			}
			continue
		}
		switch e.Kind {
		case journal.KindUser:
			if !t.haveStep {
				t.userAfter = true
			}
			i = -1 // the turn begins here
			continue
		case journal.KindToolResult:
			var r journal.ToolResult
			if err := json.Unmarshal(e.Body, &r); err != nil {
				return nil, fmt.Errorf("agent: tool_result %s: %w", e.ID, err)
			}
			t.results[r.CallID] = true
			continue
		}
		var s stepOf
		if err := json.Unmarshal(e.Body, &s); err != nil {
			return nil, fmt.Errorf("agent: %s %s: %w", e.Kind, e.ID, err)
		}
		key := s.Step
		if key == "" {
			key = e.ID // an event without a step is a step of its own
		}
		t.steps[key] = true
		switch {
		case !t.haveStep:
			t.step, t.haveStep, inStep = key, true, true
		case key != t.step:
			inStep = false
		}
		if inStep && e.Kind == journal.KindToolCall {
			var c journal.ToolCall
			if err := json.Unmarshal(e.Body, &c); err != nil {
				return nil, fmt.Errorf("agent: tool_call %s: %w", e.ID, err)
			}
			calls = append(calls, c)
			t.of(c.CallID).count++
		}
	}
	for i := len(calls) - 1; i >= 0; i-- {
		t.calls = append(t.calls, calls[i])
	}
	for _, ce := range t.effects { // gathered newest first
		reverse(ce.dispatches)
		reverse(ce.requests)
		reverse(ce.approvals)
	}
	return t, nil
}

// effect records a dispatch, approval request or decision that follows
// the newest step.
func (t *turn) effect(e *journal.Event) error {
	var err error
	switch e.Kind {
	case journal.KindToolDispatch:
		d := dispatchEvent{ID: e.ID}
		if err = json.Unmarshal(e.Body, &d.ToolDispatch); err == nil {
			ce := t.of(d.CallID)
			ce.dispatches = append(ce.dispatches, d)
		}
	case journal.KindApprovalRequest:
		r := requestEvent{ID: e.ID}
		if err = json.Unmarshal(e.Body, &r.ApprovalRequest); err == nil {
			ce := t.of(r.CallID)
			ce.requests = append(ce.requests, r)
		}
	case journal.KindApproval:
		a := approvalEvent{ID: e.ID}
		if err = json.Unmarshal(e.Body, &a.Approval); err == nil {
			ce := t.of(a.CallID)
			ce.approvals = append(ce.approvals, a)
		}
	}
	if err != nil {
		return fmt.Errorf("agent: %s %s: %w", e.Kind, e.ID, err)
	}
	return nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}
