package compat

import (
	"fmt"

	"github.com/agentcapsule/capsule/schema"
)

// checkIssues applies the approval rules in force now to every call of the
// journal (FORMAT §11.9.3). A rule is never satisfied by what an older rule
// let happen: a call that ran without an approval its tool now requires
// refuses resume until the check is run; a call that has not run yet must
// be approved, under the spec in force, before it runs.
func checkIssues(h *history, s *Spec, r Release, applied map[string]string, specDigest string) []Issue {
	var issues []Issue
	for _, c := range h.calls {
		name := c.name
		if to, ok := applied[name]; ok {
			name = to
		}
		rule, ok := resolve(name, s, r)
		if !ok || rule.Approval != schema.ApprovalRequired {
			continue
		}
		if is, ok := checkCall(c, name, specDigest); ok {
			issues = append(issues, is)
		}
	}
	return issues
}

func checkCall(c *call, name, specDigest string) (Issue, bool) {
	req, d, dEvent := c.decided()
	switch {
	case c.ran() && d != "approved":
		return Issue{Code: CodeCheckSkipped, Action: ActionRefuse, Tool: name, Events: []string{c.ranEvent()},
			Message: fmt.Sprintf("call %s of tool %q ran (event %s) without an approval, and the spec now requires one for %q: its completion does not satisfy the rule; resume is refused until an approval of call %s is journaled (the check, run now) or the rule changes", c.id, name, c.ranEvent(), name, c.id)}, true
	case c.ran() || d == "denied":
		return Issue{}, false
	case d == "" && len(c.requests) == 0:
		return Issue{Code: CodeApprovalNeeded, Action: ActionCheck, Tool: name, Events: nonEmpty(c.callEvent),
			Message: fmt.Sprintf("call %s of tool %q has not run and has no approval; the spec requires one: resume must journal an approval request and wait for a decision before it runs", c.id, name)}, true
	case d == "":
		return waiting(c, name, specDigest), true
	case req.specDigest != specDigest:
		return Issue{Code: CodeApprovalStale, Action: ActionCheck, Tool: name, Events: []string{dEvent},
			Message: fmt.Sprintf("call %s of tool %q was approved (event %s) under another spec (%s, now %s): resume must request a new approval before it runs", c.id, name, dEvent, orNone(req.specDigest), specDigest)}, true
	}
	return Issue{}, false
}

// waiting is the issue of a call parked on a request with no decision yet.
func waiting(c *call, name, specDigest string) Issue {
	r := c.requests[len(c.requests)-1]
	if r.specDigest != specDigest {
		return Issue{Code: CodeApprovalStale, Action: ActionCheck, Tool: name, Events: []string{r.event},
			Message: fmt.Sprintf("call %s of tool %q waits on a request (event %s) made under another spec (%s, now %s): resume must request approval again", c.id, name, r.event, orNone(r.specDigest), specDigest)}
	}
	return Issue{Code: CodeApprovalNeeded, Action: ActionCheck, Tool: name, Events: []string{r.event},
		Message: fmt.Sprintf("call %s of tool %q waits for a decision on request %s; resume keeps it waiting", c.id, name, r.event)}
}

func nonEmpty(ids ...string) []string {
	out := []string{}
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
