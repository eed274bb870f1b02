package main

import (
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// A decision or an effect record on a call the agent does not wait on is
// refused with its reason code and exit status 1; a deny without a reason
// and an effect without an outcome are usage errors.
func TestApproveDenyEffectRefusals(t *testing.T) {
	dir, _, id := runningAgent(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"agent", "approve", id, "c1"}, exitVerify, "refused (unknown_call)"},
		{[]string{"agent", "deny", id, "c1", "--reason", "no"}, exitVerify, "refused (unknown_call)"},
		{[]string{"agent", "effect", id, "c1", "--done", "--note", "checked"}, exitVerify, "refused (unknown_call)"},
		{[]string{"agent", "deny", id, "c1"}, exitUsage, "--reason is required"},
		{[]string{"agent", "effect", id, "c1"}, exitUsage, "exactly one of --done and --failed"},
		{[]string{"agent", "effect", id, "c1", "--done", "--failed"}, exitUsage, "exactly one of --done and --failed"},
	} {
		out, errOut, code := capsuleCLI(t, append(c.args, "--data", dir)...)
		if code != c.code || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("capsule %s: exit %d, stderr %q, stdout %q; want %d and %q", strings.Join(c.args, " "), code, errOut, out, c.code, c.want)
		}
	}
}

// agent status names each waiting call and unresolved effect with the
// command that answers it.
func TestStatusShowsApprovalsAndEffects(t *testing.T) {
	var b strings.Builder
	printStatus(&b, api.AgentStatus{ID: "01JX", State: api.StateRunning, Activity: api.WatchWaiting,
		Waiting:    []api.WaitingApproval{{CallID: "c1", Tool: "deploy.run", ArgumentsDigest: "sha256:aa"}},
		Unresolved: []api.UnresolvedEffect{{CallID: "c0", Tool: "pay.charge"}}})
	for _, want := range []string{
		"waiting: call c1 (deploy.run) for approval, arguments sha256:aa: capsule agent approve 01JX c1",
		"effect:  call c0 (pay.charge) outcome unknown: capsule agent effect 01JX c0 --done|--failed",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}

// Every kind this release knows has a one-line summary (a known kind
// without one would make capsule log fail).
func TestEveryKnownKindIsSummarized(t *testing.T) {
	for _, k := range journal.KnownKinds {
		if summaries[k] == nil {
			t.Errorf("kind %s has no summary", k)
		}
	}
	got := summaries[journal.KindApproval]([]byte(`{"call_id":"c1","request":"sha256:aa","decision":"denied","by":"alice","reason":"not now"}`))
	if got != "c1 denied by alice: not now" {
		t.Fatalf("approval summary %q", got)
	}
}
