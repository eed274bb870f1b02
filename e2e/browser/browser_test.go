package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/chromedp/chromedp"
)

// chromium is where Debian's chromium package puts the browser.
const chromium = "/usr/bin/chromium"

// The web view in a real browser, against two real nodes: the fleet page,
// an agent, a message whose reply arrives live, a model switch whose next
// reply comes from the new model, an approval of a waiting MCP call, a
// move after which the agent is on the other node's fleet page; and no
// access without the token, a forged CSRF token and a cross-origin POST
// refused. Screenshots of each page go to $CAPSULE_UI_SCREENSHOTS, else
// to a folder the test names in its log.
func TestWebViewInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real node processes and a browser; skipped with -short")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s: %v (apt-get install -y chromium; .ci/run installs it)", chromium, err)
	}
	b := newBrowserRun(t)
	b.refusedWithoutToken()
	b.fleet()
	b.talk()
	b.switchModel()
	b.approve()
	b.refusedForgeries()
	b.move()
	b.measure()
}

type browserRun struct {
	t       *testing.T
	ctx     context.Context
	n1, n2  *nodeProc
	agent   string
	counter string // the file the counter MCP server appends to
	shots   string
}

func newBrowserRun(t *testing.T) *browserRun {
	root := t.TempDir()
	sim := startSim(t)
	b := &browserRun{t: t, n1: startNode(t, root, "n1", sim), n2: startNode(t, root, "n2", sim)}
	cli(t, "node", "peer", "add", b.n2.id, b.n2.listen, "--data", b.n1.dir)
	cli(t, "node", "peer", "add", b.n1.id, b.n1.listen, "--data", b.n2.dir)
	b.shots = os.Getenv("CAPSULE_UI_SCREENSHOTS")
	if b.shots == "" {
		var err error
		if b.shots, err = os.MkdirTemp("", "capsule-ui-screenshots-"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", b.shots)
	b.agent = b.createAgent(root)
	b.ctx = newBrowser(t)
	return b
}

// createAgent creates the agent on n1: a small workspace, the simulator's
// planner on Anthropic Messages, and the counter MCP server as an external
// tool that needs approval (run unsandboxed, as it writes outside the
// workspace).
func (b *browserRun) createAgent(root string) string {
	t := b.t
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.counter = filepath.Join(bin, "count")
	spec := envspec.Default()
	spec.Sandbox.Mode = "none"
	spec.Tools = []envspec.Tool{{Name: "c", Transport: "stdio", Command: filepath.Join(bin, "counter"), Args: []string{b.counter},
		Effect: envspec.EffectExternal, Approval: envspec.ApprovalRequired}}
	raw, err := spec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(root, "spec.json")
	if err := os.WriteFile(specFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var st api.AgentStatus
	out := cli(t, "agent", "create", "--name", "web", "--stopped", "--from", ws, "--spec", specFile, "--data", b.n1.dir, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	cli(t, "agent", "model", st.ID, "--provider", "anthropic", "--api", "messages", "--model", "capsule-sim/planner", "--data", b.n1.dir)
	cli(t, "agent", "start", st.ID, "--data", b.n1.dir)
	return st.ID
}

// newBrowser starts headless Chromium for the test. Chromium refuses to
// run as root with its sandbox on (CI runs as root), so as root it runs
// with --no-sandbox; the pages it opens are the test's own.
func newBrowser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.WindowSize(1280, 1024))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs browser actions, failing the test on an error.
func (b *browserRun) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\nn1:\n%s\nn2:\n%s", what, err, tail(b.n1.log), tail(b.n2.log))
	}
}

// wait polls a JavaScript expression until it is truthy, and stores it.
// A poll that runs while the page navigates (after a form's submit) is
// cut off ("navigated or closed", "cannot find context") and starts again
// on the new page, until the deadline.
func (b *browserRun) wait(what, expr string, res any) {
	b.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		ctx, cancel := context.WithDeadline(b.ctx, deadline)
		err := chromedp.Run(ctx, chromedp.Poll(expr, res, chromedp.WithPollingInterval(10*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: %v\npage:\n%s\nn1:\n%s\nn2:\n%s", what, err, b.body(), tail(b.n1.log), tail(b.n2.log))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *browserRun) shot(name string) {
	b.t.Helper()
	var png []byte
	b.run("screenshot "+name, chromedp.FullScreenshot(&png, 100)) // quality 100 is PNG; below, JPEG
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browserRun) body() string {
	var s string
	b.run("read the page", chromedp.Evaluate(`document.body.innerText`, &s))
	return s
}

func (b *browserRun) agentURL(n *nodeProc) string { return "http://" + n.ui + "/agents/" + b.agent }

// refusedWithoutToken: before login, no page is served, and a wrong
// token logs nothing in.
func (b *browserRun) refusedWithoutToken() {
	for _, u := range []string{"http://" + b.n1.ui + "/", b.agentURL(b.n1), "http://" + b.n1.ui + "/login?token=wrong"} {
		b.run("open "+u, chromedp.Navigate(u))
		if body := b.body(); !strings.Contains(body, "Unauthorized") {
			b.t.Errorf("%s without a session shows %q, want Unauthorized", u, body)
		}
	}
	b.shot("refused-without-token")
	resp, err := http.Get("http://" + b.n1.ui + "/")
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		b.t.Errorf("GET / without a session: %s, want 401", resp.Status)
	}
}

// fleet logs in with the address capsule ui open prints and finds the
// agent on the fleet page.
func (b *browserRun) fleet() {
	b.run("log in", chromedp.Navigate(b.n1.loginURL(b.t)), chromedp.WaitVisible(`#agents`, chromedp.ByQuery))
	var row string
	b.wait("the agent on the fleet page", fmt.Sprintf(`(document.querySelector('tr.agent[data-id="%s"] .state')||{}).textContent`, b.agent), &row)
	if body := b.body(); !strings.Contains(body, b.n1.id) || !strings.Contains(body, b.n2.id) || !strings.Contains(body, "ready") {
		b.t.Errorf("the fleet page lacks the node, its peer or its health:\n%s", body)
	}
	b.shot("fleet-n1")
	b.run("open the agent", chromedp.Click(`tr.agent a`, chromedp.ByQuery), chromedp.WaitVisible(`#timeline`, chromedp.ByQuery))
	var memory string
	b.run("working memory", chromedp.Text(`#memory`, &memory, chromedp.ByQuery))
	if !strings.Contains(memory, "bytes, sha256:") {
		b.t.Errorf("the agent page's working memory: %q, want its size and digest", memory)
	}
	b.shot("agent-n1")
}

// say sends text from the page's form and returns the reply: the
// producer of the assistant item that follows the user's message, which
// must have arrived over the live stream.
func (b *browserRun) say(text string) string {
	b.submitSay(text)
	var producer string
	b.wait("the reply to "+text, fmt.Sprintf(`(() => {
		const items = [...document.querySelectorAll('#timeline li')];
		const u = items.findIndex(li => li.dataset.kind === 'user' && li.querySelector('pre').textContent === %q);
		if (u < 0) return '';
		const a = items.slice(u).find(li => li.dataset.kind === 'assistant' && li.dataset.seen);
		return a ? a.querySelector('.producer').textContent : '';
	})()`, text), &producer)
	return producer
}

// submitSay sends text from the page's form and waits until the page
// it leads to shows it.
func (b *browserRun) submitSay(text string) {
	b.run("say "+text, chromedp.SetValue(`#say textarea`, text, chromedp.ByQuery), chromedp.Click(`#say button`, chromedp.ByQuery))
	var shown bool
	b.wait("the message "+text, fmt.Sprintf(`[...document.querySelectorAll('#timeline li[data-kind=user] pre')].some(p => p.textContent === %q)`, text), &shown)
}

// talk: a message's reply streams into the open page.
func (b *browserRun) talk() {
	if got := b.say("Please list_files path=."); got != "anthropic messages capsule-sim/planner" {
		b.t.Errorf("the reply came from %q, want anthropic messages capsule-sim/planner", got)
	}
	var deltas string
	b.run("deltas", chromedp.Evaluate(`document.getElementById('streaming').dataset.deltas || '0'`, &deltas))
	b.t.Logf("reply arrived live (%s text deltas streamed before it)", deltas)
	b.shot("agent-reply")
}

// switchModel: the next reply comes from the model the form chose.
func (b *browserRun) switchModel() {
	b.run("switch model", chromedp.SetValue(`#model-form select`, "openai/responses", chromedp.ByQuery),
		chromedp.SetValue(`#model-form input[name=model]`, "capsule-sim/planner", chromedp.ByQuery),
		chromedp.Click(`#model-form button`, chromedp.ByQuery))
	var model string
	b.wait("the model shown", `(document.getElementById('model')||{}).textContent === 'openai responses capsule-sim/planner' && 'yes'`, &model)
	if got := b.say("Please list_files path=. again"); got != "openai responses capsule-sim/planner" {
		b.t.Errorf("the reply after the switch came from %q, want openai responses capsule-sim/planner", got)
	}
	b.shot("agent-switched")
}

// approve: the call to the external tool waits; the page's Approve runs
// it once.
func (b *browserRun) approve() {
	b.submitSay("Please call c.bump with note=web.")
	deadline := time.Now().Add(45 * time.Second)
	for {
		var n int
		b.run("look for the waiting call", chromedp.Navigate(b.agentURL(b.n1)), chromedp.Evaluate(`document.querySelectorAll('li.waiting').length`, &n))
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("no call waits for approval after 45 s:\n%s\n%s", b.body(), tail(b.n1.log))
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.shot("agent-waiting")
	if _, err := os.Stat(b.counter); err == nil {
		b.t.Fatal("the counter ran before the approval")
	}
	b.run("approve", chromedp.Click(`li.waiting button.approve`, chromedp.ByQuery))
	var result string
	b.wait("the tool's result", `(() => { const r = [...document.querySelectorAll('#timeline li[data-kind=tool_result]')].find(li => (li.querySelector('.tool')||{}).textContent === 'c.bump'); return r ? r.innerText : ''; })()`, &result)
	var answered string
	b.wait("the answer after the result", `(() => { const items = [...document.querySelectorAll('#timeline li')]; const r = items.findIndex(li => li.dataset.kind === 'tool_result'); return r >= 0 && items.slice(r).some(li => li.dataset.kind === 'assistant') ? 'yes' : ''; })()`, &answered)
	if got, _ := os.ReadFile(b.counter); strings.Count(string(got), "\n") != 1 {
		b.t.Errorf("the counter holds %q, want one line: the approved call ran once", got)
	}
	b.shot("agent-approved")
}

// refusedForgeries: a forged CSRF token and a cross-origin POST are
// refused in the browser, and neither reaches the journal.
func (b *browserRun) refusedForgeries() {
	b.run("forge the CSRF token", chromedp.Navigate(b.agentURL(b.n1)), chromedp.WaitVisible(`#say`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('#say input[name=csrf]').value = 'forged'; document.querySelector('#say textarea').value = 'forged-csrf'; document.querySelector('#say').submit(); true`, nil))
	var refused string
	b.wait("the CSRF refusal", `document.body.innerText.includes('CSRF token is missing or wrong') && 'yes'`, &refused)
	b.shot("refused-csrf")
	var csrf string
	b.run("read the CSRF token", chromedp.Navigate(b.agentURL(b.n1)), chromedp.WaitVisible(`#say`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('#say input[name=csrf]').value`, &csrf))
	// Another origin (same site: 127.0.0.1 on another port, so the cookie
	// goes along) posts the form with the real CSRF token, as if it had
	// leaked: the Origin check alone refuses it.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/go.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `document.forms[0].submit();`)
			return
		}
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/say"><input name="csrf" value="%s"><input name="text" value="cross-origin"></form><script src="/go.js"></script>`,
			b.agentURL(b.n1), csrf)
	}))
	defer evil.Close()
	b.run("post from another origin", chromedp.Navigate(evil.URL))
	b.wait("the cross-origin refusal", `document.body.innerText.includes('cross-origin request refused') && 'yes'`, &refused)
	b.shot("refused-cross-origin")
	page, err := b.n1.client().Events(context.Background(), b.agent, api.EventsQuery{Limit: api.MaxEventPage})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, raw := range page.Events {
		if s := string(raw); strings.Contains(s, "forged-csrf") || strings.Contains(s, "cross-origin") {
			b.t.Errorf("a refused POST reached the journal: %s", s)
		}
	}
}

// move: the page's Move sends the agent to n2, whose fleet page shows it
// running there.
func (b *browserRun) move() {
	b.run("move", chromedp.Navigate(b.agentURL(b.n1)), chromedp.WaitVisible(`#move`, chromedp.ByQuery),
		chromedp.SetValue(`#move select`, b.n2.id, chromedp.ByQuery), chromedp.Click(`#move button`, chromedp.ByQuery))
	var succ string
	b.wait("the move's end on n1", `(document.getElementById('successor')||{}).textContent || ''`, &succ)
	if succ != b.n2.id {
		b.t.Errorf("n1 shows the agent moved to %q, want %s", succ, b.n2.id)
	}
	b.shot("agent-moved-n1")
	b.run("log in to n2", chromedp.Navigate(b.n2.loginURL(b.t)), chromedp.WaitVisible(`#agents`, chromedp.ByQuery))
	var state string
	b.wait("the agent on n2's fleet page", fmt.Sprintf(`(document.querySelector('tr.agent[data-id="%s"] .state')||{}).textContent || ''`, b.agent), &state)
	b.shot("fleet-n2")
	b.run("open the agent on n2", chromedp.Navigate(b.agentURL(b.n2)), chromedp.WaitVisible(`#timeline`, chromedp.ByQuery))
	var holder string
	b.run("holder", chromedp.Text(`#holder`, &holder, chromedp.ByQuery))
	if holder != b.n2.id || !strings.HasPrefix(state, api.StateRunning) {
		b.t.Errorf("on n2 the agent is %q held by %q, want running, held by %s", state, holder, b.n2.id)
	}
	b.shot("agent-n2")
	var rows string
	b.run("the moves page", chromedp.Navigate(b.agentURL(b.n2)+"/moves"), chromedp.WaitVisible(`#moves`, chromedp.ByQuery),
		chromedp.Text(`#moves`, &rows, chromedp.ByQuery))
	if !strings.Contains(rows, b.n2.id) || !strings.Contains(rows, " ms") {
		b.t.Errorf("the moves page on n2 lacks the move to %s with its frozen window:\n%s", b.n2.id, rows)
	}
	b.t.Logf("the moves page: %s", strings.Join(strings.Fields(rows), " "))
	b.shot("moves-n2")
	var files string
	b.run("the workspace page", chromedp.Navigate(b.agentURL(b.n2)+"/workspace"), chromedp.WaitVisible(`#files`, chromedp.ByQuery),
		chromedp.Text(`#files`, &files, chromedp.ByQuery))
	if !strings.Contains(files, "README") {
		b.t.Errorf("the workspace page on n2 lacks README:\n%s", files)
	}
	b.shot("workspace-n2")
	b.run("back to the agent", chromedp.Navigate(b.agentURL(b.n2)), chromedp.WaitVisible(`#say`, chromedp.ByQuery))
	if got := b.say("Please list_files path=. on n2"); got != "openai responses capsule-sim/planner" {
		b.t.Errorf("the reply on n2 came from %q, want openai responses capsule-sim/planner", got)
	}
}

// measure prints (asserts nothing) the agent page's first load at a
// large journal and how long a journaled event takes to show in the
// open page, medians of five.
func (b *browserRun) measure() {
	t := b.t
	n := b.n1
	events := 2000
	if s := os.Getenv("CAPSULE_UI_EVENTS"); s != "" {
		fmt.Sscan(s, &events)
	}
	var st api.AgentStatus
	if err := json.Unmarshal([]byte(cli(t, "agent", "create", "--name", "big", "--stopped", "--data", n.dir, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	cl, ctx := n.client(), context.Background()
	began := time.Now()
	for i := range events {
		if _, err := cl.Say(ctx, st.ID, api.SayRequest{Text: fmt.Sprintf("message %d of the big journal", i)}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("journaled %d messages through the local API in %v", events, time.Since(began).Round(time.Millisecond))
	u := "http://" + n.ui + "/agents/" + st.ID
	var loads, lat []float64
	for i := range 5 {
		var ms float64
		b.run("load the big agent", chromedp.Navigate(u), chromedp.WaitVisible(`#timeline`, chromedp.ByQuery),
			chromedp.Evaluate(`(() => { const e = performance.getEntriesByType('navigation')[0]; return e.responseEnd - e.startTime; })()`, &ms))
		loads = append(loads, ms)
		var connected string
		b.wait("the live stream", `document.getElementById('live-state').textContent === 'live' && 'yes'`, &connected)
		text := fmt.Sprintf("latency probe %d", i)
		start := time.Now()
		if _, err := cl.Say(ctx, st.ID, api.SayRequest{Text: text}); err != nil {
			t.Fatal(err)
		}
		var seen float64
		b.wait("the probe in the page", fmt.Sprintf(`(() => { const li = [...document.querySelectorAll('#timeline li[data-kind=user]')].find(li => li.querySelector('pre').textContent === %q); return li ? +li.dataset.seen : 0; })()`, text), &seen)
		// From before the call: the event is journaled within it, and the
		// page often shows it before the call's answer is back.
		lat = append(lat, seen-float64(start.UnixMicro())/1000)
	}
	t.Logf("agent page first load (navigation to response end) at %d events: median %.1f ms of %v", events+1, median(loads), loads)
	t.Logf("event journaled (from the Say call) -> visible in the open page: median %.1f ms of %v", median(lat), lat)
	b.shot("agent-big")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
