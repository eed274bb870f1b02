package ui

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

var claude = journal.Producer{Provider: "anthropic", API: "messages", Model: "capsule-sim/planner"}

// conversation journals one turn of every kind the timeline shows.
func conversation(f *fakeService) {
	f.add(journal.KindUser, journal.UserMessage{Text: "fix <script>alert(1)</script>"})
	f.add(journal.KindReasoning, journal.Reasoning{Producer: claude, Text: "think first"})
	f.add(journal.KindToolCall, journal.ToolCall{CallID: "c1", Name: "fs.read", Arguments: []byte(`{"path":"calc.go"}`), Producer: claude})
	f.add(journal.KindToolResult, journal.ToolResult{CallID: "c1", Name: "fs.read", Content: "package calc"})
	f.add(journal.KindApprovalRequest, journal.ApprovalRequest{CallID: "c2", Name: "team.post", ArgumentsDigest: "sha256:" + strings.Repeat("a", 64),
		ToolDigest: "sha256:" + strings.Repeat("b", 64), SpecDigest: "sha256:" + strings.Repeat("c", 64)})
	f.add(journal.KindModelChange, journal.ModelChange{Provider: "openai", API: "responses", Model: "capsule-sim/planner"})
	f.add(journal.KindFrozen, journal.Frozen{Reason: "move"})
	f.add(journal.KindMoved, journal.Moved{From: "na", To: "nb", Epoch: 2})
	f.add(journal.KindAssistant, journal.AssistantMessage{Text: "fixed", Producer: claude})
}

// items returns the data-kind of each timeline item of an HTML page.
func items(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<li class="ev [^"]*" id="e(\d+)" data-index="\d+" data-kind="([a-z_]+)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1]+":"+m[2])
	}
	return out
}

// The agent page shows the agent's state, its working memory and its
// timeline: each kind, reasoning folded under its producer, tool calls
// with their arguments and results, the model change and the move, and
// text escaped.
func TestAgentPageShowsTheTimeline(t *testing.T) {
	f := newFakeService()
	conversation(f)
	f.memory = "- the bug is in <calc.go>"
	s, err := New(Config{Service: f, Token: testToken}) // one page holds them all
	if err != nil {
		t.Fatal(err)
	}
	ts := serve(t, s)
	c := browser(t)
	login(t, ts, c)
	body := readBody(t, get(t, c, ts.URL+"/agents/"+fakeAgent))
	want := []string{"0:user", "1:reasoning", "2:tool_call", "3:tool_result", "4:approval_request", "5:model_change", "6:frozen", "7:moved", "8:assistant"}
	if got := items(body); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("timeline items %v, want %v", got, want)
	}
	for _, frag := range []string{
		"fix &lt;script&gt;alert(1)&lt;/script&gt;",
		"<details><summary>reasoning by anthropic messages capsule-sim/planner</summary>",
		`&#34;path&#34;: &#34;calc.go&#34;`,
		"package calc",
		"openai responses capsule-sim/planner",
		"from na to nb at epoch 2",
		`data-live="/agents/` + fakeAgent + `/live?from=9"`,
		`<pre class="memory">- the bug is in &lt;calc.go&gt;</pre>`,
	} {
		if !strings.Contains(body, frag) {
			t.Errorf("the agent page lacks %q", frag)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("the page holds the user's text unescaped")
	}
}

// The timeline is paged newest first: the first page holds the newest
// events and links to older ones, each page links back, and only the
// newest page listens live.
func TestTimelineIsPaged(t *testing.T) {
	f := newFakeService()
	for i := range 12 {
		f.add(journal.KindUser, journal.UserMessage{Text: fmt.Sprintf("m%d", i)})
	}
	ts := newTestServer(t, f) // 5 events a page
	c := browser(t)
	login(t, ts, c)
	agent := ts.URL + "/agents/" + fakeAgent
	pages := []struct {
		url, items, older, newer string
		live                     bool
	}{
		{agent, "7:user 8:user 9:user 10:user 11:user", "?before=7", "", true},
		{agent + "?before=7", "2:user 3:user 4:user 5:user 6:user", "?before=2", `/agents/` + fakeAgent + `"`, false},
		{agent + "?before=2", "0:user 1:user", "", "?before=7", false},
	}
	for _, p := range pages {
		body := readBody(t, get(t, c, p.url))
		if got := strings.Join(items(body), " "); got != p.items {
			t.Errorf("%s: items %s, want %s", p.url, got, p.items)
		}
		older := regexp.MustCompile(`<a href="[^"]*(\?before=\d+)" id="older">`).FindStringSubmatch(body)
		if (older == nil) != (p.older == "") || older != nil && older[1] != p.older {
			t.Errorf("%s: older link %v, want %q", p.url, older, p.older)
		}
		if p.newer != "" && !strings.Contains(body, p.newer) {
			t.Errorf("%s: no newer link %q", p.url, p.newer)
		}
		if strings.Contains(body, "data-live=") != p.live {
			t.Errorf("%s: live %v, want %v", p.url, !p.live, p.live)
		}
	}
	if resp := get(t, c, agent+"?before=x"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("?before=x: %s, want 400", resp.Status)
	}
}

// The fleet page shows the node, its health and release, its peers and
// its agents with their state, model and the phase of a move in progress.
func TestFleetPage(t *testing.T) {
	f := newFakeService()
	f.status.Model = &api.ModelRef{Provider: "anthropic", API: "messages", Model: "capsule-sim/planner"}
	f.status.Move = &api.MoveStatus{Phase: api.PhaseTransfer, To: "npeeraaaaaaaaaaaaaaaaaaaaaa"}
	ts := newTestServer(t, f)
	c := browser(t)
	login(t, ts, c)
	body := readBody(t, get(t, c, ts.URL+"/"))
	for _, frag := range []string{"nself", "<td>ready</td>", "<td>test</td>", "npeeraaaaaaaaaaaaaaaaaaaaaa", "127.0.0.2:7070",
		`<a href="/agents/` + fakeAgent + `">`, "anthropic messages capsule-sim/planner", "running",
		`<td class="move">transfer to <span class="id">npeeraaaaaaaaaaaaaaaaaaaaaa</span></td>`} {
		if !strings.Contains(body, frag) {
			t.Errorf("the fleet page lacks %q", frag)
		}
	}
}

// The live stream sends each journal event from ?from (or the browser's
// Last-Event-ID) as an item of the page's own HTML, with the count of
// events seen as its id: first those the journal holds, then the live
// ones, once each (a live event the journal's read showed is dropped).
func TestLiveStreamsItems(t *testing.T) {
	f := newFakeService()
	conversation(f)
	last := f.events[len(f.events)-1]
	f.live = []journal.Event{last} // journaled while the watch subscribed: read and watched both
	next := f.add(journal.KindUser, journal.UserMessage{Text: "after"})
	f.events = f.events[:len(f.events)-1]
	f.live = append(f.live, next)
	ts := newTestServer(t, f)
	c := browser(t)
	login(t, ts, c)
	body := readBody(t, get(t, c, ts.URL+"/agents/"+fakeAgent+"/live?from=7"))
	want := "event: item\nid: 8\ndata: <li class=\"ev ev-moved\" id=\"e7\""
	if !strings.Contains(body, want) || strings.Count(body, "event: item") != 3 || !strings.Contains(body, "id: 10\ndata: <li class=\"ev ev-user\" id=\"e9\"") {
		t.Errorf("live from 7:\n%s\nwant items 7, 8 and the live 9 once each, starting %q", body, want)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/agents/"+fakeAgent+"/live?from=0", nil)
	req.Header.Set("Last-Event-ID", "8")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := readBody(t, resp); strings.Count(got, "event: item") != 2 || !strings.Contains(got, `id="e8"`) || !strings.Contains(got, `id="e9"`) {
		t.Errorf("reconnect at Last-Event-ID 8:\n%s\nwant items 8 and 9 only", got)
	}
}

// The workspace page lists the recorded tree, paths escaped.
func TestWorkspacePage(t *testing.T) {
	ts := newTestServer(t, newFakeService())
	c := browser(t)
	login(t, ts, c)
	body := readBody(t, get(t, c, ts.URL+"/agents/"+fakeAgent+"/workspace"))
	for _, frag := range []string{
		`<tr class="entry"><td class="id">README</td><td>file</td><td>6</td>`,
		`<td class="id">link</td><td>symlink</td><td></td><td class="id">→ README</td>`,
		`<td class="id">src/&lt;run&gt;.sh</td><td>file (exec)</td><td>10</td>`,
	} {
		if !strings.Contains(body, frag) {
			t.Errorf("the workspace page lacks %q\n%s", frag, body)
		}
	}
	if resp := get(t, c, ts.URL+"/agents/01JBBBBBBBBBBBBBBBBBBBBBBB/workspace"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the workspace of an unknown agent: %s, want 404", resp.Status)
	}
}
