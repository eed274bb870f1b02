package journal

import (
	"fmt"
	"strings"
)

// The kinds journal version 2 adds for tools with effects and approvals
// (docs/FORMAT.md §11.7.3). They are written by the agent runtime and read
// by it alone: the journal is the only record of what a tool was allowed
// to do and what it may have done.
const (
	KindToolDispatch    Kind = "tool_dispatch"    // a tool is about to run (synced first)
	KindApprovalRequest Kind = "approval_request" // a call waits for a person's decision
	KindApproval        Kind = "approval"         // the decision on an approval request
	KindEffectOutcome   Kind = "effect_outcome"   // an operator's record of an unknown outcome
)

// Effect classes of a tool (FORMAT §11.7.1).
const (
	EffectRead      = "read"      // no effect
	EffectWorkspace = "workspace" // changes only the workspace, which the capsule captures
	EffectExternal  = "external"  // anything else
)

// Decisions of an Approval, outcomes of an EffectOutcome and the one
// outcome a ToolResult names.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
	OutcomeDone      = "done"
	OutcomeFailed    = "failed"
	OutcomeUnknown   = "unknown"
)

// ToolDispatch is the body of KindToolDispatch: journaled, and synced,
// before the tool of CallID runs. For an external tool the call's outcome
// is unknown from here until its result. Approval is the ID of the
// approval event it consumes, if any; an approval is consumed by one
// dispatch only.
type ToolDispatch struct {
	CallID          string `json:"call_id"`
	Effect          string `json:"effect"`
	ArgumentsDigest string `json:"arguments_digest"`
	ToolDigest      string `json:"tool_digest"`
	Approval        string `json:"approval,omitempty"`
}

// ApprovalRequest is the body of KindApprovalRequest: the call CallID of
// tool Name waits for a decision. The digests bind the decision to the
// call's canonical arguments, the tool's identity and schema and the
// environment spec in force; Rule says why approval is needed.
type ApprovalRequest struct {
	CallID          string `json:"call_id"`
	Name            string `json:"name"`
	ArgumentsDigest string `json:"arguments_digest"`
	ToolDigest      string `json:"tool_digest"`
	SpecDigest      string `json:"spec_digest"`
	Rule            string `json:"rule,omitempty"`
}

// Approval is the body of KindApproval: a person's decision on the
// approval_request whose event ID is Request.
type Approval struct {
	CallID   string `json:"call_id"`
	Request  string `json:"request"`
	Decision string `json:"decision"`
	By       string `json:"by"`
	Reason   string `json:"reason,omitempty"`
}

// EffectOutcome is the body of KindEffectOutcome: what an operator found
// an external call whose outcome was unknown did.
type EffectOutcome struct {
	CallID  string `json:"call_id"`
	Outcome string `json:"outcome"`
	By      string `json:"by"`
	Note    string `json:"note,omitempty"`
}

func init() {
	bodyValidators[KindToolDispatch] = validator(func(b *ToolDispatch) error {
		return firstError(nonEmpty("call_id", b.CallID),
			oneOf("effect", b.Effect, EffectRead, EffectWorkspace, EffectExternal),
			digestMember("arguments_digest", b.ArgumentsDigest), digestMember("tool_digest", b.ToolDigest),
			optDigest("approval", b.Approval))
	})
	bodyValidators[KindApprovalRequest] = validator(func(b *ApprovalRequest) error {
		return firstError(nonEmpty("call_id", b.CallID), nonEmpty("name", b.Name),
			digestMember("arguments_digest", b.ArgumentsDigest), digestMember("tool_digest", b.ToolDigest),
			digestMember("spec_digest", b.SpecDigest))
	})
	bodyValidators[KindApproval] = validator(func(b *Approval) error {
		return firstError(nonEmpty("call_id", b.CallID), digestMember("request", b.Request),
			oneOf("decision", b.Decision, DecisionApproved, DecisionDenied), nonEmpty("by", b.By))
	})
	bodyValidators[KindEffectOutcome] = validator(func(b *EffectOutcome) error {
		return firstError(nonEmpty("call_id", b.CallID),
			oneOf("outcome", b.Outcome, OutcomeDone, OutcomeFailed), nonEmpty("by", b.By))
	})
}

func oneOf(name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s %q is not one of %s", name, clip(v), strings.Join(allowed, ", "))
}

// digestMember checks that v is "sha256:" and 64 lowercase hex digits.
func digestMember(name, v string) error {
	if !isDigest(v) {
		return fmt.Errorf("%s must be a sha256 digest", name)
	}
	return nil
}

func optDigest(name, v string) error {
	if v == "" {
		return nil
	}
	return digestMember(name, v)
}

// checkOutcome allows Outcome only as OutcomeUnknown on an interrupted result.
func checkOutcome(b *ToolResult) error {
	if b.Outcome == "" {
		return nil
	}
	if b.Outcome != OutcomeUnknown || !b.Interrupted {
		return fmt.Errorf("outcome %q is allowed only as %q on an interrupted result", clip(b.Outcome), OutcomeUnknown)
	}
	return nil
}
