package agent

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
)

// Action is what the next step does.
type Action int

// The actions Decide chooses from.
const (
	Idle        Action = iota // nothing to do until a user event or a model change
	ModelStep                 // call the model
	ToolStep                  // run Next.Call
	Interrupted               // journal an error result for Next.Call, whose tool was cut by a crash
	Blocked                   // the turn reached its step bound; Next.Reason says so
	Waiting                   // Next.Call waits for a decision on its approval request Next.Request
)

func (a Action) String() string {
	return [...]string{"idle", "model", "tool", "interrupted", "blocked", "waiting"}[a]
}

// Next is the decision for one step.
type Next struct {
	Action Action
	// Model is the model the newest model_change names (for ModelStep).
	Model journal.ModelChange
	// Call is the call to run or to answer as interrupted.
	Call journal.ToolCall
	// Reason says why the agent is idle, blocked or waiting.
	Reason string
	// Dispatch is the dispatch of an Interrupted call, nil when the call
	// was cut before any was journaled.
	Dispatch *journal.ToolDispatch
	// Request is the ID of the approval_request a Waiting call waits on.
	Request string
	// TurnSteps counts the model steps since the newest user event.
	TurnSteps int
}

// Reasons for idling.
const (
	ReasonNoModel = "the journal names no model (agent model sets one)"
	ReasonWaiting = "waiting for a user message"
)

// conversational reports whether events of kind k take part in deciding
// what comes next.
func conversational(k journal.Kind) bool {
	switch k {
	case journal.KindUser, journal.KindAssistant, journal.KindReasoning, journal.KindToolCall, journal.KindToolResult:
		return true
	}
	return false
}

// stepOf is the part of an assistant-side body that names its step.
type stepOf struct {
	Step string `json:"step"`
}

// Decide reads from the journal alone what the next step is. interrupted
// is the call whose tool a node was running when it stopped ("" if none);
// maxTurn bounds the model steps of one user turn (0: the default).
//
// The newest step (the events of the newest assistant generation) decides:
// a call of it without a result is answered as interrupted when it was
// dispatched (its tool_dispatch is journaled) or is the one whose tool was
// cut, waits while its newest approval request has no decision, and is run
// otherwise (oldest first); when every call has its result the model is
// called again; a user event after it calls the model; otherwise the agent
// is idle. Decide reads the journal from its end and stops at the newest
// user event before the newest step, so its cost is the length of the
// open turn, not of the journal.
func Decide(events []journal.Event, interrupted string, maxTurn int) (Next, error) {
	next, _, err := decide(events, interrupted, maxTurn)
	return next, err
}

// decide is Decide, also returning the turn it read.
func decide(events []journal.Event, interrupted string, maxTurn int) (Next, *turn, error) {
	if maxTurn <= 0 {
		maxTurn = DefaultMaxTurnSteps
	}
	var next Next
	mc, ok, err := CurrentModel(events)
	if err != nil {
		return next, nil, err
	}
	if !ok {
		return Next{Action: Idle, Reason: ReasonNoModel}, nil, nil
	}
	next.Model = mc
	t, err := scanTurn(events)
	if err != nil {
		return next, nil, err
	}
	next.TurnSteps = len(t.steps)
	for _, c := range t.calls {
		if t.results[c.CallID] {
			continue
		}
		next.Call = c
		ce := t.effects[c.CallID]
		req, dec := ce.request()
		switch {
		case len(ce.dispatches) > 0:
			next.Action = Interrupted
			next.Dispatch = &ce.dispatches[len(ce.dispatches)-1].ToolDispatch
		case c.CallID == interrupted:
			next.Action = Interrupted
		case req != nil && dec == nil:
			next.Action = Waiting
			next.Request = req.ID
			next.Reason = "waiting for approval of call " + c.CallID + " (" + c.Name + ")"
		default:
			next.Action = ToolStep
		}
		return next, t, nil
	}
	if t.userAfter || (t.haveStep && len(t.calls) > 0) {
		if next.TurnSteps >= maxTurn {
			next.Action = Blocked
			next.Reason = fmt.Sprintf("the agent took %d model steps since the last user message (the bound is %d); a user message continues it", next.TurnSteps, maxTurn)
			return next, t, nil
		}
		next.Action = ModelStep
		return next, t, nil
	}
	next.Action = Idle
	next.Reason = ReasonWaiting
	return next, t, nil
}

// CurrentModel returns the model the newest model_change names.
func CurrentModel(events []journal.Event) (journal.ModelChange, bool, error) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind != journal.KindModelChange {
			continue
		}
		var mc journal.ModelChange
		if err := json.Unmarshal(events[i].Body, &mc); err != nil {
			return mc, false, fmt.Errorf("agent: model_change %s: %w", events[i].ID, err)
		}
		return mc, true, nil
	}
	return journal.ModelChange{}, false, nil
}
