package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/sandbox"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/anthropic"
	"github.com/agentcapsule/capsule/provider/gemini"
	"github.com/agentcapsule/capsule/provider/ollama"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/tool"
	"github.com/agentcapsule/capsule/vfs"
)

// modelClients are the provider clients of package provider/<name>, made once
// per node on one HTTP client (no timeout of its own: a call's context
// bounds it).
type modelClients struct {
	once  sync.Once
	byAPI map[render.API]provider.Client
}

func (c *modelClients) get(api render.API) (provider.Client, error) {
	c.once.Do(func() {
		hc := &http.Client{}
		c.byAPI = map[render.API]provider.Client{
			render.Anthropic: anthropic.New(hc),
			render.Gemini:    gemini.New(hc),
			render.Ollama:    ollama.New(hc),
		}
		addOpenAI(c.byAPI, hc)
	})
	if cl, ok := c.byAPI[api]; ok {
		return cl, nil
	}
	return nil, fmt.Errorf("node: no client for API %s in this build", api)
}

// workingMemory is the node-local scratch copy of the capsule's
// memory/working_memory.md that the memory tool rewrites; each write is
// committed into the capsule before its result is journaled.
const workingMemory = "working_memory.md"

// openWorkspaceTools opens the built-in workspace tools for the tenant:
// the workspace, and the memory tool on a scratch copy of the capsule's
// working memory that is committed into the capsule after each write; and
// it starts the spec's MCP servers beside them (withMCP).
func (a *tenant) openWorkspaceTools(workdir string) (agent.Toolbox, io.Closer, error) {
	scratch, err := filepath.Abs(a.path(workingMemory)) // the tool wants an absolute path
	if err != nil {
		return nil, nil, err
	}
	mem, err := vfs.ReadFile(a.n.fsys, filepath.Join(a.capsule(), filepath.FromSlash(manifest.WorkingMemoryPath)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if err = vfs.WriteFile(a.n.fsys, scratch, mem, 0o600); err != nil {
		return nil, nil, err
	}
	spec, err := a.spec(a.capsule())
	if err != nil {
		return nil, nil, err
	}
	opts := tool.Options{MemoryFile: scratch, MaxMemoryBytes: spec.WorkingMaxBytes()}

	if sb, err := a.n.sandbox(); err == nil { // without one, run is not offered and says why
		opts.Sandbox, opts.Policy = sb, a.n.toolPolicy(spec, workdir)
	}
	ws, err := tool.OpenWorkspace(workdir, opts)
	if err != nil {
		return nil, nil, err
	}
	return a.withMCP(&workspaceTools{ws: ws, a: a, scratch: scratch, policy: opts.Policy, rules: spec.Builtins}, ws, spec, workdir)
}

// workspaceTools adapts tool.Workspace to agent.Toolbox and commits the
// working memory after the memory tool rewrote it.
type workspaceTools struct {
	ws      *tool.Workspace
	a       *tenant
	scratch string
	policy  sandbox.Policy          // the run tool's
	rules   map[string]envspec.Rule // the spec's rules of built-in tools
}

// Info describes the run tool, whose effect class depends on its sandbox
// policy (workspace without network, external with hosts); the node
// describes the other built-in tools (describedTools).
func (w *workspaceTools) Info(name string) (agent.ToolInfo, bool) {
	if name != tool.RunCommand {
		return agent.ToolInfo{}, false
	}
	for _, t := range w.ws.Tools() {
		if t.Name == name {
			approval := agent.ApprovalNever
			if r, ok := w.rules[name]; ok && r.Approval != "" {
				approval = r.Approval
			}
			return agent.ToolInfo{Name: name, Effect: tool.RunEffect(w.policy), Approval: approval, Digest: agent.ToolDigest(t)}, true
		}
	}
	return agent.ToolInfo{}, false
}

func (w *workspaceTools) Tools() []render.Tool { return w.ws.Tools() }

func (w *workspaceTools) Run(ctx context.Context, name string, args json.RawMessage) agent.ToolOutput {
	r := w.ws.Run(ctx, name, args)
	out := agent.ToolOutput{Content: r.Content, IsError: r.IsError, Full: r.Full, MediaType: r.MediaType}
	if name != tool.Memory || r.IsError {
		return out
	}
	if err := w.a.commitWorkingMemory(w.scratch); err != nil {
		return agent.ToolOutput{Content: "the working memory was not saved: " + err.Error(), IsError: true}
	}
	return out
}

// commitWorkingMemory commits the scratch working memory into the capsule
// when it differs from the committed one.
func (a *tenant) commitWorkingMemory(scratch string) error {
	b, err := vfs.ReadFile(a.n.fsys, scratch)
	if err != nil {
		return err
	}
	c, err := capsule.Open(a.n.fsys, a.capsule(), capsule.Config{Writer: a.n.writer()})
	if err != nil {
		return err
	}
	old, err := vfs.ReadFile(a.n.fsys, filepath.Join(a.capsule(), filepath.FromSlash(manifest.WorkingMemoryPath)))
	if err == nil && bytes.Equal(old, b) {
		return nil
	}
	return c.Commit(func(tx *capsule.Tx) error {
		if err := tx.SetWorkingMemory(b); err != nil {
			return err
		}
		return tx.SetJournal(manifestJournal(a.log.Summary()))
	})
}
