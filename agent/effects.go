package agent

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
)

// WaitingApproval is a call parked until a person decides on it.
type WaitingApproval struct {
	CallID          string `json:"call_id"`
	Tool            string `json:"tool"`
	ArgumentsDigest string `json:"arguments_digest"`
	Request         string `json:"request"` // the approval_request event's ID
	Rule            string `json:"rule,omitempty"`
}

// UnresolvedEffect is an external call whose outcome is unknown: it was
// dispatched and cut before its result, and no operator has recorded what
// it did (effect_outcome).
type UnresolvedEffect struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Result string `json:"result"` // the interrupted tool_result event's ID
}

// WaitingOn returns the call the agent waits on, if any (what Decide says
// of the journal; a request a later user message made moot is not shown).
func WaitingOn(events []journal.Event) (*WaitingApproval, error) {
	next, t, err := decide(events, "", 0)
	if err != nil || next.Action != Waiting {
		return nil, err
	}
	req, _ := t.effects[next.Call.CallID].request()
	return &WaitingApproval{CallID: next.Call.CallID, Tool: next.Call.Name, ArgumentsDigest: req.ArgumentsDigest, Request: req.ID, Rule: req.Rule}, nil
}

// Unresolved returns the external calls of the whole journal whose
// outcome is unknown and not yet recorded, oldest first.
func Unresolved(events []journal.Event) ([]UnresolvedEffect, error) {
	var out []UnresolvedEffect
	at := map[string]int{} // call ID -> index in out
	for i := range events {
		e := &events[i]
		switch e.Kind {
		case journal.KindToolResult:
			var r journal.ToolResult
			if err := json.Unmarshal(e.Body, &r); err != nil {
				return nil, fmt.Errorf("agent: tool_result %s: %w", e.ID, err)
			}
			if r.Outcome == journal.OutcomeUnknown {
				at[r.CallID] = len(out)
				out = append(out, UnresolvedEffect{CallID: r.CallID, Tool: r.Name, Result: e.ID})
			}
		case journal.KindEffectOutcome:
			var o journal.EffectOutcome
			if err := json.Unmarshal(e.Body, &o); err != nil {
				return nil, fmt.Errorf("agent: effect_outcome %s: %w", e.ID, err)
			}
			if j, ok := at[o.CallID]; ok {
				out[j].CallID = "" // resolved
				delete(at, o.CallID)
			}
		}
	}
	kept := out[:0]
	for _, u := range out {
		if u.CallID != "" {
			kept = append(kept, u)
		}
	}
	return kept, nil
}
