package compat

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/schema"
)

// A tool the journal names that the spec and the release no longer have
// refuses resume, naming the tool and every event, whether the name is in
// history, in a pending call or in an approval (FORMAT §11.9.1).
func TestRemovedToolRefuses(t *testing.T) {
	spec := specV2(t, map[string]any{"mcp_servers": []any{server("web", "read", "never", nil)}})
	j := newJournal(t)
	j.call("c1", 2, "1", "web.search")
	j.result("r1", 2, "1", "web.search")
	j.call("c2", 2, "2", "old.fetch")
	j.result("r2", 2, "2", "old.fetch")
	j.call("c3", 2, "3", "gone.run")
	j.request("q4", "4", "retired.deploy", fakeDigest("spec"))
	j.decide("a4", "4", j.id("q4"), "approved")
	rep := check(t, spec, j, nextRelease())
	want := []issueSummary{
		{CodeToolMissing, ActionRefuse, "gone.run", []string{j.id("c3")}},
		{CodeToolMissing, ActionRefuse, "old.fetch", []string{j.id("c2"), j.id("r2")}},
		{CodeToolMissing, ActionRefuse, "retired.deploy", []string{j.id("q4"), j.id("a4")}},
	}
	if d := cmp.Diff(want, summaries(rep.Issues)); d != "" {
		t.Errorf("issues (-want +got):\n%s", d)
	}
	if !rep.Refused {
		t.Error("restore not refused")
	}
	mustContain(t, rep.Issues[0].Message, `"gone.run"`, "1 of a pending call")
	mustContain(t, rep.Issues[2].Message, "2 of approvals")
}

// A declared mapping lets resume go on: the report proposes the
// tool_mapping event that journals it, unless the journal already holds
// that very mapping; a mapping to a tool that does not exist refuses. The
// old name, "lookup", is a tool no release has ("search" is a built-in).
func TestMappedTool(t *testing.T) {
	servers := []any{server("web", "read", "never", nil)}
	for _, tc := range []struct {
		name      string
		mappings  map[string]any
		release   map[string]string
		journaled bool
		want      []issueSummary
		append    []schema.ToolMapping
	}{
		{name: "spec", mappings: map[string]any{"lookup": "web.search"},
			want:   []issueSummary{{CodeToolMapped, ActionMap, "lookup", nil}},
			append: []schema.ToolMapping{{From: "lookup", To: "web.search", Source: "spec"}}},
		{name: "release", release: map[string]string{"lookup": "web.search"},
			want:   []issueSummary{{CodeToolMapped, ActionMap, "lookup", nil}},
			append: []schema.ToolMapping{{From: "lookup", To: "web.search", Source: "release"}}},
		{name: "already journaled", mappings: map[string]any{"lookup": "web.search"}, journaled: true, want: []issueSummary{}},
		{name: "journaled, no longer declared", journaled: true, want: []issueSummary{}},
		{name: "to nothing", mappings: map[string]any{"lookup": "web2.search"},
			want: []issueSummary{{CodeToolMissing, ActionRefuse, "lookup", nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := specV2(t, map[string]any{"mcp_servers": servers, "tool_mappings": orEmpty(tc.mappings)})
			j := newJournal(t)
			ids := []string{j.call("", 2, "1", "lookup"), j.result("", 2, "1", "lookup")}
			if tc.journaled {
				j.add("", 2, "tool_mapping", schema.ToolMapping{From: "lookup", To: "web.search", Source: "spec"})
			}
			r := nextRelease()
			r.Mappings = tc.release
			rep := check(t, spec, j, r)
			for i := range tc.want {
				tc.want[i].Events = ids
			}
			if d := cmp.Diff(tc.want, summaries(rep.Issues)); d != "" {
				t.Errorf("issues (-want +got):\n%s", d)
			}
			var got []schema.ToolMapping
			for _, a := range rep.Append {
				if err := schema.CheckJournalV2Body(a.Kind, a.Body); err != nil || a.V != 2 {
					t.Errorf("append %s v%d: %v", a.Body, a.V, err)
				}
				var m schema.ToolMapping
				json.Unmarshal(a.Body, &m)
				got = append(got, m)
			}
			if d := cmp.Diff(tc.append, got); d != "" {
				t.Errorf("append (-want +got):\n%s", d)
			}
		})
	}
}

// A release that writes journal version 1 cannot journal a mapping, so it
// refuses rather than apply one silently.
func TestMappingNeedsJournalV2(t *testing.T) {
	spec := specV2(t, map[string]any{"mcp_servers": []any{server("web", "read", "never", nil)}, "tool_mappings": map[string]any{"lookup": "web.search"}})
	j := newJournal(t)
	j.call("c", 1, "1", "lookup")
	r := nextRelease()
	r.Reads[schema.Journal] = Range{Floor: 1, Current: 1}
	rep := check(t, spec, j, r)
	if len(rep.Issues) != 1 || rep.Issues[0].Code != CodeToolMissing || !rep.Refused || len(rep.Append) != 0 {
		t.Fatalf("got %+v", rep)
	}
	mustContain(t, rep.Issues[0].Message, "cannot record a tool_mapping")
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Release 0.3.0 adds the run tool and serves the tools of the spec's MCP
// servers; release 0.2.0 has neither, so a journal that names them is
// refused there and reads here (FORMAT §11.9.1, docs/RELEASES.md).
func TestReleaseTable030(t *testing.T) {
	spec := specV2(t, map[string]any{"mcp_servers": []any{server("web", "read", "never", nil)}})
	j := newJournal(t)
	j.call("c1", 1, "1", "run")
	j.result("r1", 1, "1", "run")
	j.call("c2", 1, "2", "web.search")
	j.result("r2", 1, "2", "web.search")
	j.call("c3", 1, "3", "read_file")
	j.result("r3", 1, "3", "read_file")
	if rep := check(t, spec, j, Current()); len(rep.Issues) != 0 || rep.Refused {
		t.Errorf("release %s: %+v", schema.Release, rep.Issues)
	}
	want := []issueSummary{
		{CodeToolMissing, ActionRefuse, "run", []string{j.id("c1"), j.id("r1")}},
		{CodeToolMissing, ActionRefuse, "web.search", []string{j.id("c2"), j.id("r2")}},
	}
	if d := cmp.Diff(want, summaries(check(t, spec, j, Release020()).Issues)); d != "" {
		t.Errorf("release 0.2.0 (-want +got):\n%s", d)
	}
	if r, err := LookupRelease("0.2.0"); err != nil || r.Reads[schema.Journal].Current != 1 || r.Reads[schema.Environment].Current != 2 {
		t.Errorf("release 0.2.0 reads %+v, %v", r.Reads, err)
	}
	if b := Current().Tools["run"]; b.Effect != schema.EffectExternal || b.Approval != schema.ApprovalNever {
		t.Errorf("run: %+v", b)
	}
}
