package journal_test

import (
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/schema"
)

// The bodies journal writes for the version-2 kinds are the ones FORMAT
// §11.7.3 designs (schema.CheckJournalV2Body, the design's own check), and
// both refuse the same broken bodies.
func TestEffectBodiesFollowTheDesign(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	good := []struct {
		kind journal.Kind
		body any
	}{
		{journal.KindToolDispatch, journal.ToolDispatch{CallID: "c1", Effect: journal.EffectExternal, ArgumentsDigest: d, ToolDigest: d, Approval: d}},
		{journal.KindToolDispatch, journal.ToolDispatch{CallID: "c1", Effect: journal.EffectRead, ArgumentsDigest: d, ToolDigest: d}},
		{journal.KindApprovalRequest, journal.ApprovalRequest{CallID: "c1", Name: "deploy.run", ArgumentsDigest: d, ToolDigest: d, SpecDigest: d, Rule: "r"}},
		{journal.KindApproval, journal.Approval{CallID: "c1", Request: d, Decision: journal.DecisionDenied, By: "alice", Reason: "no"}},
		{journal.KindEffectOutcome, journal.EffectOutcome{CallID: "c1", Outcome: journal.OutcomeFailed, By: "alice", Note: "n"}},
	}
	for _, g := range good {
		raw, err := journal.MarshalBody(g.kind, g.body)
		if err != nil {
			t.Fatalf("%s: %v", g.kind, err)
		}
		if err := schema.CheckJournalV2Body(string(g.kind), raw); err != nil {
			t.Errorf("%s %s: the design refuses it: %v", g.kind, raw, err)
		}
	}
	bad := []struct {
		kind journal.Kind
		body string
	}{
		{journal.KindToolDispatch, `{"call_id":"c1","effect":"network","arguments_digest":"` + d + `","tool_digest":"` + d + `"}`},
		{journal.KindToolDispatch, `{"call_id":"c1","effect":"read","arguments_digest":"sha256:x","tool_digest":"` + d + `"}`},
		{journal.KindApprovalRequest, `{"call_id":"c1","name":"x","arguments_digest":"` + d + `","tool_digest":"` + d + `"}`},
		{journal.KindApproval, `{"call_id":"c1","request":"` + d + `","decision":"maybe","by":"a"}`},
		{journal.KindApproval, `{"call_id":"c1","request":"` + d + `","decision":"approved"}`},
		{journal.KindEffectOutcome, `{"call_id":"c1","outcome":"unknown","by":"a"}`},
		{journal.KindEffectOutcome, `{"call_id":"c1","outcome":"done","by":"a","extra":1}`},
	}
	for _, b := range bad {
		if err := journal.ValidateBody(b.kind, []byte(b.body)); err == nil {
			t.Errorf("%s %s: journal accepts it", b.kind, b.body)
		}
		if err := schema.CheckJournalV2Body(string(b.kind), []byte(b.body)); err == nil {
			t.Errorf("%s %s: the design accepts it", b.kind, b.body)
		}
	}
	for _, r := range []string{`{"call_id":"c1","content":"x","outcome":"unknown"}`, `{"call_id":"c1","content":"x","interrupted":true,"outcome":"done"}`} {
		if err := journal.ValidateBody(journal.KindToolResult, []byte(r)); err == nil {
			t.Errorf("tool_result %s accepted: outcome is only unknown, only when interrupted", r)
		}
	}
	if err := journal.ValidateBody(journal.KindToolResult, []byte(`{"call_id":"c1","content":"x","is_error":true,"interrupted":true,"outcome":"unknown"}`)); err != nil {
		t.Error(err)
	}
}
