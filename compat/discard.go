package compat

import (
	"fmt"
	"io"

	"github.com/agentcapsule/capsule/schema"
)

// Discard refusal codes (FORMAT §11.9.4).
const (
	CodeNotEphemeral = "not_ephemeral" // the spec does not declare the agent ephemeral
	CodeApproval     = "approval"      // the journal holds a person's decision
	CodeUsage        = "usage"         // usage went above the spec's bound
	CodeEffect       = "effect"        // an external effect was dispatched
)

// Refusal is one reason an agent may not be discarded, with the event that
// shows it.
type Refusal struct {
	Code    string `json:"code"`
	Event   string `json:"event,omitempty"`
	Message string `json:"message"`
}

// DiscardDecision is the answer of CanDiscard: Allowed only when there is no
// refusal.
type DiscardDecision struct {
	Allowed  bool      `json:"allowed"`
	Refusals []Refusal `json:"refusals"`
}

// CanDiscard decides whether an agent may be discarded instead of migrated
// (issue 12, requirement 10; FORMAT §11.9.4). Only an agent whose spec
// declares it ephemeral may be, and even then never when its journal holds
// an approval or a denial, usage (input plus output tokens, summed) above
// the spec's discard_max_tokens, or a dispatched external effect (a
// tool_dispatch of effect external, or before journal version 2 a call with
// a result whose tool is external or unknown to the spec and release r).
// Every refusal names its event. Anything the journal cannot be read past
// refuses too: what was not read cannot be shown harmless.
func CanDiscard(spec []byte, j io.Reader, r Release) (DiscardDecision, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return DiscardDecision{}, err
	}
	h := readHistory(j)
	var out []Refusal
	if !s.Lifecycle.Ephemeral {
		out = append(out, Refusal{Code: CodeNotEphemeral,
			Message: fmt.Sprintf("the spec (version %d) does not declare the agent ephemeral (lifecycle.ephemeral); migrate it or refuse", s.Version)})
	}
	if h.parseProblem != nil {
		out = append(out, Refusal{Code: CodeJournal, Message: fmt.Sprintf("the journal does not read after %d events: %v", h.events, h.parseProblem)})
	}
	out = append(out, approvalRefusals(h)...)
	if ref, ok := usageRefusal(h, s.Lifecycle.DiscardMaxTokens); ok {
		out = append(out, ref)
	}
	out = append(out, effectRefusals(h, s, r)...)
	return DiscardDecision{Allowed: len(out) == 0, Refusals: nonNilRefusals(out)}, nil
}

func approvalRefusals(h *history) []Refusal {
	var out []Refusal
	for _, c := range h.calls {
		for _, a := range c.approvals {
			out = append(out, Refusal{Code: CodeApproval, Event: a.event,
				Message: fmt.Sprintf("event %s records a person's decision (%s) on call %s; discarding it would drop that decision", a.event, a.decision, c.id)})
		}
	}
	for _, id := range h.v1Authority {
		out = append(out, Refusal{Code: CodeApproval, Event: id, Message: fmt.Sprintf("event %s is a version-1 line of a kind version 2 adds", id)})
	}
	return out
}

// usageRefusal names the usage event at which the sum went above bound.
func usageRefusal(h *history, bound int64) (Refusal, bool) {
	var sum int64
	for _, u := range h.usage {
		sum += u.tokens
		if sum > bound {
			return Refusal{Code: CodeUsage, Event: u.event,
				Message: fmt.Sprintf("usage reaches %d tokens at event %s, above the spec's discard_max_tokens %d: the agent was charged for substantial work", sum, u.event, bound)}, true
		}
	}
	return Refusal{}, false
}

func effectRefusals(h *history, s *Spec, r Release) []Refusal {
	var out []Refusal
	for _, c := range h.calls {
		for _, d := range c.dispatches {
			if d.effect != schema.EffectRead && d.effect != schema.EffectWorkspace {
				out = append(out, Refusal{Code: CodeEffect, Event: d.event,
					Message: fmt.Sprintf("event %s dispatched call %s of %q with effect %s, which cannot be repeated safely", d.event, c.id, c.name, orNone(d.effect))})
			}
		}
		if len(c.dispatches) > 0 || c.v >= 2 || !c.ran() {
			continue
		}
		if rule, ok := resolve(c.name, s, r); !ok || rule.Effect == schema.EffectExternal {
			out = append(out, Refusal{Code: CodeEffect, Event: c.result,
				Message: fmt.Sprintf("call %s of %q has a result (event %s) and its tool is external or unknown: it may have had an effect that cannot be repeated", c.id, c.name, c.result)})
		}
	}
	return out
}

func nonNilRefusals(r []Refusal) []Refusal {
	if r == nil {
		return []Refusal{}
	}
	return r
}
