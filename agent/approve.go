package agent

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
)

// Reason codes of a refused approval decision or dispatch (FORMAT
// §11.7.3, "Approvals"). Each is its own code in the API's error and the
// CLI's message.
const (
	RefuseUnknownCall      = "unknown_call"      // no call of the open step waits on an approval request with that ID
	RefuseAlreadyDecided   = "already_decided"   // the request is decided, or the call has its result
	RefuseArgumentsChanged = "arguments_changed" // the call's arguments are not the ones the request names
	RefuseToolChanged      = "tool_changed"      // the tool's identity or schema changed since the request
	RefuseSpecChanged      = "spec_changed"      // the environment spec changed since the request
	RefuseDuplicateCall    = "duplicate_call"    // the call ID appears twice in one step
	RefuseConsumed         = "consumed"          // the journal holds the dispatch that consumed the approval
)

// RefusalError is a decision or a dispatch refused with a reason code.
type RefusalError struct {
	Code   string
	CallID string
	Msg    string
}

// Error names the call, the code and why.
func (e *RefusalError) Error() string {
	return fmt.Sprintf("agent: approval of call %s refused (%s): %s", e.CallID, e.Code, e.Msg)
}

func refuse(code, callID, format string, args ...any) *RefusalError {
	return &RefusalError{Code: code, CallID: callID, Msg: fmt.Sprintf(format, args...)}
}

// Binding is what an approval binds to besides the call ID: the digests of
// the call's arguments, of its tool and of the spec in force. An empty
// member is not checked (the caller cannot know it now).
type Binding struct {
	Arguments, Tool, Spec string
}

// check compares a request with what is in force now.
func (b Binding) check(r *requestEvent) *RefusalError {
	switch {
	case b.Arguments != "" && r.ArgumentsDigest != b.Arguments:
		return refuse(RefuseArgumentsChanged, r.CallID, "the request names arguments %s, the call has %s", r.ArgumentsDigest, b.Arguments)
	case b.Tool != "" && r.ToolDigest != b.Tool:
		return refuse(RefuseToolChanged, r.CallID, "tool %s was %s when approval was asked and is %s now", r.Name, r.ToolDigest, b.Tool)
	case b.Spec != "" && r.SpecDigest != b.Spec:
		return refuse(RefuseSpecChanged, r.CallID, "the environment spec was %s when approval was asked and is %s now", r.SpecDigest, b.Spec)
	}
	return nil
}

// Decision is an approval request that may be decided now.
type Decision struct {
	// Request is the ID of the approval_request the decision answers.
	Request string
	// Body is that request.
	Body journal.ApprovalRequest
}

// CheckDecision checks that call callID may be decided now: it waits on
// an approval request of the open step that is not decided, the call ID
// appears once in its step, no dispatch consumed an approval of it, and
// the request names what is in force now (now; its Arguments member, when
// set, is the digest the person deciding saw). It returns the request to
// answer, or a *RefusalError. The node checks again at dispatch.
func CheckDecision(events []journal.Event, callID string, now Binding) (Decision, error) {
	t, err := scanTurn(events)
	if err != nil {
		return Decision{}, err
	}
	ce := t.effects[callID]
	req, dec := ce.request()
	var call *journal.ToolCall
	for i := range t.calls {
		if t.calls[i].CallID == callID {
			call = &t.calls[i]
		}
	}
	switch {
	case call == nil || req == nil:
		return Decision{}, decidedBefore(events, callID)
	case ce.count > 1:
		return Decision{}, refuse(RefuseDuplicateCall, callID, "the call ID appears %d times in one step; none of them may run", ce.count)
	case consumed(t, ce) != nil:
		return Decision{}, refuse(RefuseConsumed, callID, "dispatch %s already consumed an approval of this call", consumed(t, ce).ID)
	case dec != nil:
		return Decision{}, refuse(RefuseAlreadyDecided, callID, "request %s was %s by %s", req.ID, dec.Decision, dec.By)
	case t.results[callID] || len(ce.dispatches) > 0:
		return Decision{}, refuse(RefuseAlreadyDecided, callID, "the call already has its result")
	}
	if r := (Binding{Arguments: ArgumentsDigest(call.Arguments)}).check(req); r != nil {
		return Decision{}, r
	}
	if r := now.check(req); r != nil {
		return Decision{}, r
	}
	return Decision{Request: req.ID, Body: req.ApprovalRequest}, nil
}

// consumed returns a dispatch that names one of the call's approvals.
func consumed(t *turn, ce *callEffects) *dispatchEvent {
	for _, a := range ce.approvals {
		if d := t.consumer(a.ID); d != nil {
			return d
		}
	}
	return nil
}

// decidedBefore says why a call that is not waiting in the open step
// cannot be decided: an approval of it that a dispatch consumed
// (consumed), one that was decided (already_decided), or none at all
// (unknown_call). It reads the whole journal.
func decidedBefore(events []journal.Event, callID string) error {
	approvals := map[string]bool{}
	decided := false
	for i := range events {
		e := &events[i]
		switch e.Kind {
		case journal.KindApproval:
			var a journal.Approval
			if json.Unmarshal(e.Body, &a) == nil && a.CallID == callID {
				approvals[e.ID], decided = true, true
			}
		case journal.KindToolDispatch:
			var d journal.ToolDispatch
			if json.Unmarshal(e.Body, &d) == nil && approvals[d.Approval] {
				return refuse(RefuseConsumed, callID, "dispatch %s already consumed an approval of this call", e.ID)
			}
		}
	}
	if decided {
		return refuse(RefuseAlreadyDecided, callID, "the call was decided and is no longer waiting")
	}
	return refuse(RefuseUnknownCall, callID, "no call of the agent's open step waits for approval under this ID")
}
