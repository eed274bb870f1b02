package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
)

// Each action of the agent page makes its one call of the local API
// with the form's values and sends the browser back to the page.
func TestActionsCallTheLocalAPI(t *testing.T) {
	f := newFakeService()
	ts := newTestServer(t, f)
	c := browser(t)
	csrf := login(t, ts, c)
	digest := "sha256:" + strings.Repeat("d", 64)
	steps := []struct {
		action string
		form   url.Values
		want   string
	}{
		{"say", url.Values{"text": {"hello <b>"}}, "say hello <b>"},
		{"model", url.Values{"choice": {"anthropic/messages"}, "model": {"capsule-sim/planner"}}, "model anthropic messages capsule-sim/planner"},
		{"approve", url.Values{"call": {"c2"}, "digest": {digest}, "by": {"alice"}}, "approved c2 by alice digest " + digest + ` reason ""`},
		{"deny", url.Values{"call": {"c3"}, "digest": {digest}, "reason": {"not now"}}, "denied c3 by operator digest " + digest + ` reason "not now"`},
		{"stop", nil, "stop"},
		{"start", nil, "start"},
		{"move", url.Values{"to": {"npeeraaaaaaaaaaaaaaaaaaaaaa"}}, "move npeeraaaaaaaaaaaaaaaaaaaaaa"},
	}
	var want []string
	for _, s := range steps {
		form := url.Values{"csrf": {csrf}}
		for k, v := range s.form {
			form[k] = v
		}
		resp := post(t, c, ts.URL+"/agents/"+fakeAgent+"/"+s.action, ts.URL, form)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/agents/"+fakeAgent {
			t.Errorf("%s: %s to %q, want 303 to the agent page\n%s", s.action, resp.Status, resp.Header.Get("Location"), readBody(t, resp))
		}
		want = append(want, s.want)
	}
	if got := f.made(); !slices.Equal(got, want) {
		t.Errorf("calls\n%q\nwant\n%q", got, want)
	}
}

// An action the CLI would refuse is refused with the CLI's check before
// any call, and a refusal of the node is shown in the page with its
// status; nothing else is called.
func TestActionErrorsShowInThePage(t *testing.T) {
	f := newFakeService()
	ts := newTestServer(t, f)
	c := browser(t)
	csrf := login(t, ts, c)
	cases := []struct {
		action string
		form   url.Values
		status int
		msg    string
	}{
		{"say", url.Values{"text": {"  "}}, http.StatusBadRequest, "say: the text is empty"},
		{"deny", url.Values{"call": {"c1"}}, http.StatusBadRequest, "a reason is required"},
		{"model", url.Values{"choice": {"anthropic/messages"}}, http.StatusBadRequest, "a provider and a model are required"},
		{"move", url.Values{"to": {"../etc"}}, http.StatusBadRequest, "node ID"},
	}
	for _, tc := range cases {
		tc.form.Set("csrf", csrf)
		resp := post(t, c, ts.URL+"/agents/"+fakeAgent+"/"+tc.action, ts.URL, tc.form)
		body := readBody(t, resp)
		if resp.StatusCode != tc.status || !strings.Contains(body, `id="error">`+tc.action+": ") || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %s, want %d and the error %q in the page\n%s", tc.action, resp.Status, tc.status, tc.msg, body)
		}
	}
	if got := f.made(); len(got) != 0 {
		t.Fatalf("refused actions reached the service: %v", got)
	}
	f.refuse = &api.Error{Status: http.StatusConflict, Code: "conflict", Reason: "already_decided", Message: "approve: call c1 was decided already (already_decided)"}
	resp := post(t, c, ts.URL+"/agents/"+fakeAgent+"/approve", ts.URL, url.Values{"csrf": {csrf}, "call": {"c1"}})
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "decided already (already_decided)") {
		t.Errorf("a refused approval: %s, want 409 and the node's reason\n%s", resp.Status, body)
	}
	f.refuse = fmt.Errorf("%w: agent %s is frozen for a move", api.ErrConflict, fakeAgent)
	if resp := post(t, c, ts.URL+"/agents/"+fakeAgent+"/say", ts.URL, url.Values{"csrf": {csrf}, "text": {"hi"}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("a refused say: %s, want 409", resp.Status)
	}
}

// The page offers a waiting call's approval and denial bound to the
// arguments digest it shows.
func TestWaitingCallsOfferDecisions(t *testing.T) {
	f := newFakeService()
	digest := "sha256:" + strings.Repeat("e", 64)
	f.waiting = []api.WaitingApproval{{CallID: "c9", Tool: "team.post", ArgumentsDigest: digest}}
	ts := newTestServer(t, f)
	c := browser(t)
	login(t, ts, c)
	body := readBody(t, get(t, c, ts.URL+"/agents/"+fakeAgent))
	for _, frag := range []string{`action="/agents/` + fakeAgent + `/approve"`, `action="/agents/` + fakeAgent + `/deny"`,
		`name="call" value="c9"`, `name="digest" value="` + digest + `"`, "team.post"} {
		if !strings.Contains(body, frag) {
			t.Errorf("the agent page lacks %q", frag)
		}
	}
}
