package node

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/mcp"
	"github.com/agentcapsule/capsule/sandbox"
	"github.com/agentcapsule/capsule/vfs"
)

// Every process a tool starts (a run command, a stdio MCP server) runs in
// the sandbox this process probed once (package sandbox: bubblewrap, else
// Landlock with seccomp), under a policy made from the agent's
// environment spec. With no sandbox, run is not offered and a server does
// not start: nothing runs unsandboxed unless the spec says sandbox: none
// and the node was started with AllowUnsandboxed (--allow-unsandboxed).

// probed is the sandbox of this process, probed on first use: the host's
// facts do not change while it runs, and a probe runs commands.
var probed = sync.OnceValues(func() (*sandbox.Sandbox, error) { return sandbox.Probe("") })

// sandboxModeNone is the spec's sandbox.mode that asks for no sandbox.
const sandboxModeNone = "none"

// The node's defaults for limits the spec leaves at zero.
const (
	defaultToolProcesses = 256
	defaultToolMemoryMB  = 4096
	defaultToolDiskMB    = 4096
)

// spec reads and parses the environment spec of the capsule at dir.
func (a *tenant) spec(dir string) (*envspec.Spec, error) {
	b, err := vfs.ReadFile(a.n.fsys, filepath.Join(dir, filepath.FromSlash(manifest.EnvironmentPath)))
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	spec, err := envspec.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	return spec, nil
}

// sandbox returns the node's sandbox (Config.Sandbox, else the probed one).
func (n *Node) sandbox() (*sandbox.Sandbox, error) {
	if n.cfg.Sandbox != nil {
		return n.cfg.Sandbox, nil
	}
	return probed()
}

// sandboxStatus says which sandbox the node's tools run in, for status.
func (n *Node) sandboxStatus(spec *envspec.Spec) string {
	if spec != nil && n.unsandboxed(spec) {
		return "none (unsandboxed: the spec says sandbox none and the node allows it)"
	}
	sb, err := n.sandbox()
	switch {
	case err != nil:
		return "none: " + err.Error()
	case sb.Kind() == sandbox.KindNone:
		return "none: " + sb.Reason()
	}
	return sb.Kind()
}

// unsandboxed reports whether spec's tools run without a sandbox here.
func (n *Node) unsandboxed(spec *envspec.Spec) bool {
	return spec.Sandbox.Mode == sandboxModeNone && n.cfg.AllowUnsandboxed
}

// toolPolicy is the sandbox policy of the agent's tools in workspace ws.
func (n *Node) toolPolicy(spec *envspec.Spec, ws string) sandbox.Policy {
	s := spec.Sandbox
	p := sandbox.Policy{Workspace: ws, Network: string(s.Network), Hosts: s.Hosts, Unsandboxed: n.unsandboxed(spec),
		Limits: sandbox.Limits{Wall: time.Duration(s.WallSeconds) * time.Second, OutputBytes: s.OutputBytes,
			Processes: int(s.Processes), MemoryMB: int(s.MemoryMB), DiskMB: int(s.DiskMB)}}
	if p.Limits.Processes == 0 {
		p.Limits.Processes = defaultToolProcesses
	}
	if p.Limits.MemoryMB == 0 {
		p.Limits.MemoryMB = defaultToolMemoryMB
	}
	if p.Limits.DiskMB == 0 {
		p.Limits.DiskMB = defaultToolDiskMB
	}
	return p
}

// sandboxProblem says why the spec's tools cannot run on this node, ""
// when they can: a move's prepare refuses with it (issue 14 req 6).
func (n *Node) sandboxProblem(spec *envspec.Spec) string {
	if n.unsandboxed(spec) {
		return ""
	}
	sb, err := n.sandbox()
	switch {
	case err != nil:
		return "sandbox unavailable: " + err.Error()
	case sb.Kind() == sandbox.KindNone:
		return "sandbox unavailable: " + sb.Reason()
	}
	return ""
}

// mcpLauncher starts stdio MCP servers of spec in the sandbox, with the
// workspace ws as the only place they write. A server's life is not
// bounded by the wall time (it lives as long as the runner).
func (n *Node) mcpLauncher(spec *envspec.Spec, ws string) mcp.Launcher {
	if n.unsandboxed(spec) {
		return mcp.Exec
	}
	return func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
		sb, err := n.sandbox()
		if err != nil {
			return nil, fmt.Errorf("sandbox unavailable: %w", err)
		}
		p := n.toolPolicy(spec, ws)
		p.Env, p.Limits.Wall, p.Limits.OutputBytes = env, 0, 0
		return sb.Command(ctx, p, argv)
	}
}
