package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
)

// demoTeam is the demo's external tool: an MCP server named "team",
// served in-process over streamable HTTP on loopback, with one tool,
// post, that appends a message to the "team channel". The channel is kept
// in memory and in a file outside every workspace, so a post is an effect
// no capsule captures: the spec declares the server external with
// approval required, and the demo counts the posts to show that the
// approved call ran exactly once.
type demoTeam struct {
	url  string
	file string // the channel's file, one message a line
	hs   *http.Server

	mu    sync.Mutex
	posts []string
}

// demoTeamName and demoTeamTool name the server and its tool; the agent
// is offered it as demoTeamName + "." + demoTeamTool.
const (
	demoTeamName = "team"
	demoTeamTool = "post"
)

// teamPost is the arguments of the post tool.
type teamPost struct {
	Message string `json:"message" jsonschema:"the message to post to the team channel"`
}

// startDemoTeam serves the team server on 127.0.0.1 (a free port),
// appending posts to file.
func startDemoTeam(file string) (*demoTeam, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: team server: %w", err)
	}
	t := &demoTeam{url: "http://" + ln.Addr().String() + "/mcp", file: file}
	srv := sdk.NewServer(&sdk.Implementation{Name: demoTeamName, Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: demoTeamTool, Description: "Post a message to the team channel."}, t.post)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	t.hs = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = t.hs.Serve(ln) }()
	return t, nil
}

// post appends the message to the channel: the file first, so a post
// counted is a post written.
func (t *demoTeam) post(_ context.Context, _ *sdk.CallToolRequest, in teamPost) (*sdk.CallToolResult, any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := os.OpenFile(t.file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("demo: team channel: %w", err)
	}
	_, err = fmt.Fprintln(f, in.Message)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("demo: team channel: %w", err)
	}
	t.posts = append(t.posts, in.Message)
	text := fmt.Sprintf("posted to the team channel (post %d): %s", len(t.posts), in.Message)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
}

// channel returns the messages posted so far.
func (t *demoTeam) channel() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.posts...)
}

// spec returns the agent's environment spec: the default one with the
// team server, external, every call to be approved.
func (t *demoTeam) spec() ([]byte, error) {
	s := envspec.Default()
	s.Tools = []envspec.Tool{{Name: demoTeamName, Transport: "http", URL: t.url,
		Effect: envspec.EffectExternal, Approval: envspec.ApprovalRequired}}
	b, err := s.Marshal()
	if err != nil {
		return nil, fmt.Errorf("demo: spec: %w", err)
	}
	return b, nil
}

// Close stops the server and closes its connections.
func (t *demoTeam) Close() error { return t.hs.Close() }

// demoTeamMessage is what the third turn asks the agent to post.
const demoTeamMessage = "Add in calc.go adds again: fixed by the demo agent, checked on node B"

// teamTurn is the third turn, on B: the agent is asked to post to the
// team channel with team.post. The call parks the agent until it is
// approved; the demo approves it as an operator would, and the agent
// dispatches it once and answers.
func (d *demoRun) teamTurn(ctx context.Context) error {
	b, name := d.nodes[1], demoTeamName+"."+demoTeamTool
	wire, err := d.offeredName(name)
	if err != nil {
		return err
	}
	head := fmt.Sprintf("-- demo: on B, a third turn asks the agent to post to the team channel with %s, the tool of an MCP server over HTTP that the spec declares external, approval required", name)
	if wire == name {
		d.out.say("%s --", head)
	} else {
		d.out.say("%s;", head)
		d.out.say("   Anthropic refuses dots in tool names, so B's requests offer %s as %s (render maps it back for the journal) --", name, wire)
	}
	text := fmt.Sprintf("Tell the team: call %s with message=%q.", name, demoTeamMessage)
	if _, err := b.Say(ctx, d.id, api.SayRequest{Text: text}); err != nil {
		return err
	}
	w, err := d.waitApproval(ctx, b)
	if err != nil {
		return err
	}
	d.res.Team.Call = w.CallID
	// The transcript shows the request first: the watch stream may lag
	// behind the status the wait read.
	if err := waitUntil(ctx, "the transcript to show the approval request", func() bool { return d.tr.approvalRequests() >= 1 }); err != nil {
		return err
	}
	d.out.say("-- demo: approving call %s (%s, arguments %s) as an operator would: capsule agent approve %s %s --",
		w.CallID, w.Tool, w.ArgumentsDigest, d.id, w.CallID)
	if _, err := b.Approve(ctx, d.id, api.ApproveRequest{CallID: w.CallID, Decision: api.DecisionApproved,
		By: "demo", ArgumentsDigest: w.ArgumentsDigest}); err != nil {
		return err
	}
	return d.waitAnswers(ctx, b, 3)
}

// waitApproval waits until the agent on n waits on a call's approval.
func (d *demoRun) waitApproval(ctx context.Context, n *node.Node) (api.WaitingApproval, error) {
	var w api.WaitingApproval
	err := waitUntil(ctx, "the agent to wait for an approval", func() bool {
		st, err := n.Agent(ctx, d.id)
		if err != nil || len(st.Waiting) == 0 {
			return false
		}
		w = st.Waiting[0]
		return true
	})
	return w, err
}

// offeredName returns the name B's Anthropic requests offer the tool
// name by (render maps a name the API refuses), checked against the
// tools of the newest request the simulator received.
func (d *demoRun) offeredName(name string) (string, error) {
	user := journal.Event{Kind: journal.KindUser, Body: []byte(`{"text":"?"}`)}
	p, err := render.NewPlan([]journal.Event{user}, render.Target{API: render.Anthropic, Model: sim.Planner,
		Tools: []render.Tool{{Name: name}}})
	if err != nil {
		return "", fmt.Errorf("demo: the name %s is offered by: %w", name, err)
	}
	wire := name
	for _, m := range p.Report.ToolNames {
		if m.From == name {
			wire = m.To
		}
	}
	log := d.ep.sim.Requests()
	if len(log) == 0 || !strings.Contains(string(log[len(log)-1].Body), `"name":"`+wire+`"`) {
		return "", fmt.Errorf("demo: the newest model request does not offer %s as %s", name, wire)
	}
	return wire, nil
}
