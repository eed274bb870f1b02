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
)

func (a Action) String() string {
	return [...]string{"idle", "model", "tool", "interrupted", "blocked"}[a]
}

// Next is the decision for one step.
type Next struct {
	Action Action
	// Model is the model the newest model_change names (for ModelStep).
	Model journal.ModelChange
	// Call is the call to run or to answer as interrupted.
	Call journal.ToolCall
	// Reason says why the agent is idle or blocked.
	Reason string
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
// a call of it without a result is run (oldest first), or answered as
// interrupted when it is the one that was cut; when every call has its
// result the model is called again; a user event after it calls the model;
// otherwise the agent is idle. Decide reads the journal from its end and
// stops at the newest user event before the newest step, so its cost is
// the length of the open turn, not of the journal.
func Decide(events []journal.Event, interrupted string, maxTurn int) (Next, error) {
	if maxTurn <= 0 {
		maxTurn = DefaultMaxTurnSteps
	}
	var next Next
	mc, ok, err := CurrentModel(events)
	if err != nil {
		return next, err
	}
	if !ok {
		return Next{Action: Idle, Reason: ReasonNoModel}, nil
	}
	next.Model = mc
	var (
		step      string // the newest step
		inStep    bool   // scanning the newest step's events
		haveStep  bool
		userAfter bool // a user event after the newest step
		calls     []journal.ToolCall
		results   = map[string]bool{}
		steps     = map[string]bool{}
	)
	for i := len(events) - 1; i >= 0; i-- {
		e := &events[i]
		if !conversational(e.Kind) {
			continue
		}
		switch e.Kind {
		case journal.KindUser:
			if !haveStep {
				userAfter = true
			}
			i = -1 // the turn begins here
			continue
		case journal.KindToolResult:
			var r journal.ToolResult
			if err := json.Unmarshal(e.Body, &r); err != nil {
				return next, fmt.Errorf("agent: tool_result %s: %w", e.ID, err)
			}
			results[r.CallID] = true
			continue
		}
		var s stepOf
		if err := json.Unmarshal(e.Body, &s); err != nil {
			return next, fmt.Errorf("agent: %s %s: %w", e.Kind, e.ID, err)
		}
		key := s.Step
		if key == "" {
			key = e.ID // an event without a step is a step of its own
		}
		steps[key] = true
		switch {
		case !haveStep:
			step, haveStep, inStep = key, true, true
		case key != step:
			inStep = false
		}
		if inStep && e.Kind == journal.KindToolCall {
			var c journal.ToolCall
			if err := json.Unmarshal(e.Body, &c); err != nil {
				return next, fmt.Errorf("agent: tool_call %s: %w", e.ID, err)
			}
			calls = append(calls, c)
		}
	}
	next.TurnSteps = len(steps)
	// calls were gathered newest first.
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if results[c.CallID] {
			continue
		}
		next.Call = c
		if c.CallID == interrupted {
			next.Action = Interrupted
		} else {
			next.Action = ToolStep
		}
		return next, nil
	}
	if userAfter || (haveStep && len(calls) > 0) {
		if next.TurnSteps >= maxTurn {
			next.Action = Blocked
			next.Reason = fmt.Sprintf("the agent took %d model steps since the last user message (the bound is %d); a user message continues it", next.TurnSteps, maxTurn)
			return next, nil
		}
		next.Action = ModelStep
		return next, nil
	}
	next.Action = Idle
	next.Reason = ReasonWaiting
	return next, nil
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
