package compat

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/digest"
)

// A completed call never satisfies a rule added after it ran: a tool that
// now needs approval, shown dispatched (or, before journal version 2, with
// a result) without one, refuses resume naming the event; a call that has
// not run must be approved under the spec in force before it runs (FORMAT
// §11.9.3).
func TestNewlyRequiredCheck(t *testing.T) {
	pay := server("pay", "external", "required", nil)
	spec := specV2(t, map[string]any{"mcp_servers": []any{pay}, "tools": map[string]any{"counter.increment": map[string]any{"approval": "required"}}})
	here := string(digest.FromBytes(spec))
	for _, tc := range []struct {
		name  string
		build func(j *jb)
		want  func(j *jb) []issueSummary
	}{
		{"dispatched without approval", func(j *jb) {
			j.call("c", 2, "1", "pay.send")
			j.dispatch("d", "1", "external")
			j.result("r", 2, "1", "pay.send")
		}, func(j *jb) []issueSummary {
			return []issueSummary{{CodeCheckSkipped, ActionRefuse, "pay.send", []string{j.id("d")}}}
		}},
		{"built-in completed before the rule (journal v1)", func(j *jb) {
			j.call("c", 1, "1", "counter.increment")
			j.result("r", 1, "1", "counter.increment")
		}, func(j *jb) []issueSummary {
			return []issueSummary{{CodeCheckSkipped, ActionRefuse, "counter.increment", []string{j.id("r")}}}
		}},
		{"approved, then dispatched", func(j *jb) {
			j.call("c", 2, "1", "pay.send")
			j.request("q", "1", "pay.send", fakeDigest("an older spec"))
			j.decide("a", "1", j.id("q"), "approved")
			j.dispatch("d", "1", "external")
			j.result("r", 2, "1", "pay.send")
		}, none},
		{"approval of another request", func(j *jb) {
			j.call("c", 2, "1", "pay.send")
			j.request("q", "1", "pay.send", here)
			j.decide("a", "1", fakeDigest("not the request"), "approved")
			j.dispatch("d", "1", "external")
		}, func(j *jb) []issueSummary {
			return []issueSummary{{CodeCheckSkipped, ActionRefuse, "pay.send", []string{j.id("d")}}}
		}},
		{"denied", func(j *jb) {
			j.call("c", 2, "1", "pay.send")
			j.request("q", "1", "pay.send", here)
			j.decide("a", "1", j.id("q"), "denied")
			j.result("r", 2, "1", "pay.send")
		}, none},
		{"pending, never asked", func(j *jb) { j.call("c", 2, "1", "pay.send") },
			func(j *jb) []issueSummary {
				return []issueSummary{{CodeApprovalNeeded, ActionCheck, "pay.send", []string{j.id("c")}}}
			}},
		{"pending, waiting", func(j *jb) {
			j.call("c", 2, "1", "pay.send")
			j.request("q", "1", "pay.send", here)
		}, func(j *jb) []issueSummary {
			return []issueSummary{{CodeApprovalNeeded, ActionCheck, "pay.send", []string{j.id("q")}}}
		}},
		{"pending, requested under another spec", func(j *jb) {
			j.call("c", 2, "1", "pay.send")
			j.request("q", "1", "pay.send", fakeDigest("an older spec"))
		}, func(j *jb) []issueSummary {
			return []issueSummary{{CodeApprovalStale, ActionCheck, "pay.send", []string{j.id("q")}}}
		}},
		{"pending, approved under this spec", func(j *jb) {
			j.call("c", 2, "1", "pay.send")
			j.request("q", "1", "pay.send", here)
			j.decide("a", "1", j.id("q"), "approved")
		}, none},
		{"pending, approved under another spec", func(j *jb) {
			j.call("c", 2, "1", "pay.send")
			j.request("q", "1", "pay.send", fakeDigest("an older spec"))
			j.decide("a", "1", j.id("q"), "approved")
		}, func(j *jb) []issueSummary {
			return []issueSummary{{CodeApprovalStale, ActionCheck, "pay.send", []string{j.id("a")}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJournal(t)
			tc.build(j)
			rep := check(t, spec, j, nextRelease())
			want := tc.want(j)
			if d := cmp.Diff(want, summaries(rep.Issues)); d != "" {
				t.Errorf("issues (-want +got):\n%s", d)
			}
			refuse := len(want) > 0 && want[0].Action == ActionRefuse
			if rep.Refused != refuse {
				t.Errorf("refused %v, want %v", rep.Refused, refuse)
			}
		})
	}
}

// The same journals under a spec that does not require approval raise
// nothing: the check is the rule's, not the journal's.
func TestNoRuleNoCheck(t *testing.T) {
	spec := specV2(t, map[string]any{"mcp_servers": []any{server("pay", "external", "never", nil)}})
	j := newJournal(t)
	j.call("c", 2, "1", "pay.send")
	j.dispatch("d", "1", "external")
	j.call("c2", 2, "2", "pay.send")
	if rep := check(t, spec, j, nextRelease()); len(rep.Issues) != 0 || rep.Refused {
		t.Errorf("got %+v", rep.Issues)
	}
}

func none(*jb) []issueSummary { return []issueSummary{} }
