package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/mcp"
	"github.com/agentcapsule/capsule/render"
)

// The MCP servers of an agent's environment spec (docs/FORMAT.md §11.7.1)
// run while its runner runs: they start with the runner's tools (the
// first step of a run), are offered beside the workspace tools, and stop
// when the runner stops (an operator stop, a freeze). A move's target
// starts them once during prepare, on the staged workspace, and stops
// them again: a server that cannot start there refuses the prepare, so
// the move rolls back before the point of no return with the reason.

// mcpPath is the PATH a stdio server gets unless the spec sets one: the
// system's directories only (the node's own PATH may name the operator's).
const mcpPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// startMCP starts the MCP servers spec declares, working in the workspace
// ws; it returns nil when there are none.
func (a *tenant) startMCP(ctx context.Context, spec *envspec.Spec, ws string) (*mcp.Set, error) {
	if len(spec.Tools) == 0 {
		return nil, nil
	}
	env := map[string]string{"PATH": mcpPath}
	for k, v := range spec.Env {
		env[k] = v
	}
	return mcp.Start(ctx, mcp.Config{
		Servers: spec.Tools,
		Env:     env,
		Dir:     filepath.Join(ws, filepath.FromSlash(spec.Workdir)),
		Launch:  a.n.mcpLauncher(spec, ws),
		Secret:  a.n.secrets.Lookup,
	})
}

// withMCP adds the agent's MCP servers to the workspace tools tb (closed by
// c); when a server does not start, c is closed and the error says which.
func (a *tenant) withMCP(tb agent.Toolbox, c io.Closer, spec *envspec.Spec, ws string) (agent.Toolbox, io.Closer, error) {
	set, err := a.startMCP(context.Background(), spec, ws)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if set == nil {
		return tb, c, nil
	}
	return &mcpTools{Toolbox: tb, set: set}, closers{set, c}, nil
}

// prepareMCP starts and stops the staged agent's MCP servers: the
// prepare's check that every one starts on this node.
func (a *tenant) prepareMCP(in *inMove) []string {
	spec, err := a.spec(in.capsule())
	if err != nil {
		return []string{err.Error()}
	}
	set, err := a.startMCP(context.Background(), spec, filepath.Join(in.dir, workDir))
	if err != nil {
		return []string{err.Error()}
	}
	if set != nil {
		set.Close()
	}
	return nil
}

// mcpTools offers the MCP servers' tools after the workspace tools.
type mcpTools struct {
	agent.Toolbox
	set *mcp.Set
}

// Tools returns the workspace tools, then every server's.
func (m *mcpTools) Tools() []render.Tool {
	return append(m.Toolbox.Tools(), m.set.Tools()...)
}

// Run runs an MCP tool on its server and any other on the workspace.
func (m *mcpTools) Run(ctx context.Context, name string, args json.RawMessage) agent.ToolOutput {
	if _, ok := m.set.Info(name); !ok {
		return m.Toolbox.Run(ctx, name, args)
	}
	r := m.set.Call(ctx, name, args)
	out := agent.ToolOutput{Content: r.Content, IsError: r.IsError, Full: r.Full}
	if len(r.Full) > 0 {
		out.MediaType = "text/plain; charset=utf-8"
	}
	return out
}

// MCPInfo returns what the runtime knows of the MCP tool name: its effect
// class, approval rule and identity digest.
func (m *mcpTools) MCPInfo(name string) (mcp.ToolInfo, bool) { return m.set.Info(name) }

// Info implements agent.Described: an MCP tool as the spec rules it (its
// server's annotations are never read), any other as the workspace tools
// describe it.
func (m *mcpTools) Info(name string) (agent.ToolInfo, bool) {
	if t, ok := m.set.Info(name); ok {
		return agent.ToolInfo{Name: t.Name, Effect: t.Effect, Approval: t.Approval, Digest: string(t.Digest)}, true
	}
	if d, ok := m.Toolbox.(agent.Described); ok {
		return d.Info(name)
	}
	return agent.ToolInfo{}, false
}

var _ agent.Described = (*mcpTools)(nil)

// closers closes each in order and returns the errors joined.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
