package compat

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/schema"
)

// resolve finds the tool name under the spec and the release: a built-in
// (its effect the release's, its approval the spec's rule when it names
// one), or, for a release that starts MCP servers, a tool "server.tool" of
// one of the spec's MCP servers (its own rule when the server names it, else
// the server's).
func resolve(name string, s *Spec, r Release) (Rule, bool) {
	if b, ok := r.Tools[name]; ok {
		rule := Rule{Effect: b.Effect, Approval: b.Approval}
		if sr, ok := s.Tools[name]; ok && sr.Approval != "" {
			rule.Approval = sr.Approval
		}
		return rule, true
	}
	srv, tool, ok := s.server(name)
	if !ok || !r.MCP {
		return Rule{}, false
	}
	rule := Rule{Effect: srv.Effect, Approval: srv.Approval}
	if tr, ok := srv.Tools[tool]; ok {
		rule.Approval = tr.Approval
		if tr.Effect != "" {
			rule.Effect = tr.Effect
		}
	}
	return rule, true
}

// nameRef is one event that names a tool, and in which role.
type nameRef struct{ event, role string }

// The roles in which an event names a tool.
const (
	roleHistory  = "history"  // a call with its result, or that result
	rolePending  = "pending"  // a call without a result
	roleApproval = "approval" // an approval request, or a decision on one
)

var roleWords = map[string]string{roleHistory: "in history", rolePending: "of a pending call", roleApproval: "of approvals"}

// names lists, per tool name, the events that name it.
func (h *history) names() map[string][]nameRef {
	out := map[string][]nameRef{}
	for _, c := range h.calls {
		if c.name == "" {
			continue
		}
		role := roleHistory
		if c.result == "" {
			role = rolePending
		}
		for _, id := range []string{c.callEvent, c.result} {
			if id != "" {
				out[c.name] = append(out[c.name], nameRef{id, role})
			}
		}
		for _, r := range c.requests {
			out[c.name] = append(out[c.name], nameRef{r.event, roleApproval})
		}
		for _, a := range c.approvals {
			out[c.name] = append(out[c.name], nameRef{a.event, roleApproval})
		}
	}
	return out
}

// toolIssues checks that every tool the journal names resolves now, directly
// or through a mapping the spec or the release declares (or that the journal
// already records). A mapping that the journal does not yet record is
// returned as a tool_mapping event the caller appends before resuming.
func toolIssues(h *history, s *Spec, r Release, journalWrites int) ([]Issue, []Append, map[string]string) {
	var issues []Issue
	var appends []Append
	applied := map[string]string{}
	refs := h.names()
	for _, name := range sortedKeys(refs) {
		if _, ok := resolve(name, s, r); ok {
			continue
		}
		ids := refIDs(refs[name])
		to, source, journaled := h.mappingFor(name, s, r)
		switch {
		case to == "":
			issues = append(issues, Issue{Code: CodeToolMissing, Action: ActionRefuse, Tool: name, Events: ids,
				Message: fmt.Sprintf("tool %q is named by %s, but neither release %s nor the spec has it, and no mapping is declared; declare one in the spec's tool_mappings (version 2), or restore with a release and spec that have it", name, describeRefs(refs[name]), r.Name)})
		case !resolvable(to, s, r):
			issues = append(issues, Issue{Code: CodeToolMissing, Action: ActionRefuse, Tool: name, Events: ids,
				Message: fmt.Sprintf("tool %q (named by %s) is mapped by the %s to %q, which does not exist either", name, describeRefs(refs[name]), source, to)})
		case journaled:
			applied[name] = to
		case journalWrites < 2:
			issues = append(issues, Issue{Code: CodeToolMissing, Action: ActionRefuse, Tool: name, Events: ids,
				Message: fmt.Sprintf("tool %q (named by %s) is mapped to %q, but release %s writes journal version %d, which cannot record a tool_mapping", name, describeRefs(refs[name]), to, r.Name, journalWrites)})
		default:
			applied[name] = to
			appends = append(appends, mappingEvent(name, to, source))
			issues = append(issues, Issue{Code: CodeToolMapped, Action: ActionMap, Tool: name, Events: ids,
				Message: fmt.Sprintf("tool %q (named by %s) is served by %q through the %s's mapping; resume appends a tool_mapping event first", name, describeRefs(refs[name]), to, source)})
		}
	}
	return issues, appends, applied
}

func resolvable(name string, s *Spec, r Release) bool {
	_, ok := resolve(name, s, r)
	return ok
}

// mappingFor returns the name that serves name now: the spec's mapping, else
// the release's, else the latest one the journal records; and whether the
// journal already records that very mapping.
func (h *history) mappingFor(name string, s *Spec, r Release) (to, source string, journaled bool) {
	last := ""
	for _, m := range h.mappings {
		if m.from == name {
			last = m.to
		}
	}
	switch {
	case s.Mappings[name] != "":
		to, source = s.Mappings[name], "spec"
	case r.Mappings[name] != "":
		to, source = r.Mappings[name], "release"
	case last != "":
		return last, "journal", true
	default:
		return "", "", false
	}
	return to, source, last == to
}

// mappingEvent is the tool_mapping event that records a rename (FORMAT
// §11.7.3), at journal version 2.
func mappingEvent(from, to, source string) Append {
	b, _ := json.Marshal(schema.ToolMapping{From: from, To: to, Source: source})
	return Append{Kind: kindToolMapping, V: 2, Body: b}
}

func refIDs(refs []nameRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.event
	}
	return out
}

// describeRefs says how many events name a tool, per role.
func describeRefs(refs []nameRef) string {
	n := map[string]int{}
	for _, r := range refs {
		n[r.role]++
	}
	var parts []string
	for _, role := range []string{roleHistory, rolePending, roleApproval} {
		if n[role] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[role], roleWords[role]))
		}
	}
	return fmt.Sprintf("%d events (%s)", len(refs), strings.Join(parts, ", "))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
