package schema

import (
	"fmt"
	"regexp"
)

// The bodies of the kinds journal version 2 adds (FORMAT §11.7.3). Package
// journal checks them when it writes version 2; until then they are the
// design the runtime issues fill, and CheckJournalV2Body is their test.

// ToolDispatch is journaled, and synced, before a tool runs: for an
// external tool the call's outcome is unknown from here until its result.
type ToolDispatch struct {
	CallID          string `json:"call_id"`
	Effect          string `json:"effect"`
	ArgumentsDigest string `json:"arguments_digest"`
	ToolDigest      string `json:"tool_digest"`
	Approval        string `json:"approval,omitempty"` // id of the approval event it consumes
}

// ApprovalRequest parks the agent until an approval or a denial.
type ApprovalRequest struct {
	CallID          string `json:"call_id"`
	Name            string `json:"name"`
	ArgumentsDigest string `json:"arguments_digest"`
	ToolDigest      string `json:"tool_digest"`
	SpecDigest      string `json:"spec_digest"`
	Rule            string `json:"rule,omitempty"`
}

// Approval is a person's decision on one approval request.
type Approval struct {
	CallID   string `json:"call_id"`
	Request  string `json:"request"`
	Decision string `json:"decision"` // approved or denied
	By       string `json:"by"`
	Reason   string `json:"reason,omitempty"`
}

// EffectOutcome is an operator's record of what an external call whose
// outcome was unknown did.
type EffectOutcome struct {
	CallID  string `json:"call_id"`
	Outcome string `json:"outcome"` // done or failed
	By      string `json:"by"`
	Note    string `json:"note,omitempty"`
}

// ToolMapping records a rename applied at resume.
type ToolMapping struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Source string `json:"source"` // spec or release
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// CheckJournalV2Body checks body, the JSON body of an event of one of the
// kinds journal version 2 adds: only its members, each of its type, the
// required ones present and every enumerated value known.
func CheckJournalV2Body(kind string, body []byte) error {
	var probs []string
	need := func(name, v string) {
		if v == "" {
			probs = append(probs, name+" is required")
		}
	}
	digest := func(name, v string) {
		if !digestRE.MatchString(v) {
			probs = append(probs, name+" must be a sha256 digest")
		}
	}
	oneOf := func(name, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		probs = append(probs, fmt.Sprintf("%s %q is not one of %v", name, v, allowed))
	}
	switch kind {
	case "tool_dispatch":
		var b ToolDispatch
		if err := decodeStrict(body, &b); err != nil {
			return err
		}
		need("call_id", b.CallID)
		oneOf("effect", b.Effect, EffectRead, EffectWorkspace, EffectExternal)
		digest("arguments_digest", b.ArgumentsDigest)
		digest("tool_digest", b.ToolDigest)
		if b.Approval != "" {
			digest("approval", b.Approval)
		}
	case "approval_request":
		var b ApprovalRequest
		if err := decodeStrict(body, &b); err != nil {
			return err
		}
		need("call_id", b.CallID)
		need("name", b.Name)
		digest("arguments_digest", b.ArgumentsDigest)
		digest("tool_digest", b.ToolDigest)
		digest("spec_digest", b.SpecDigest)
	case "approval":
		var b Approval
		if err := decodeStrict(body, &b); err != nil {
			return err
		}
		need("call_id", b.CallID)
		digest("request", b.Request)
		oneOf("decision", b.Decision, "approved", "denied")
		need("by", b.By)
	case "effect_outcome":
		var b EffectOutcome
		if err := decodeStrict(body, &b); err != nil {
			return err
		}
		need("call_id", b.CallID)
		oneOf("outcome", b.Outcome, "done", "failed")
		need("by", b.By)
	case "tool_mapping":
		var b ToolMapping
		if err := decodeStrict(body, &b); err != nil {
			return err
		}
		need("from", b.From)
		need("to", b.To)
		oneOf("source", b.Source, "spec", "release")
	default:
		return fmt.Errorf("%w: %q is not a kind journal version 2 adds", ErrInput, kind)
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s: %v", ErrInput, kind, probs)
	}
	return nil
}
