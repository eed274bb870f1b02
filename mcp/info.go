package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// ToolInfo is what the runtime needs to know of one MCP tool before it
// runs it: its name as offered ("SERVER.TOOL"), its effect class
// (envspec.EffectRead, EffectWorkspace or EffectExternal), its approval
// rule (envspec.ApprovalRequired or ApprovalNever) and the digest of its
// identity (Identity), which an approval and a tool_dispatch bind to.
type ToolInfo struct {
	Name     string
	Effect   string
	Approval string
	Digest   digest.Digest
}

// Identity is what a tool's digest covers: the server that serves it
// (name, transport, and command with arguments or URL) and the tool as
// the server declares it (name, description, input schema). Its digest is
// the SHA-256 of its RFC 8785 form, so a changed command, description or
// schema changes the digest and an approval given before no longer
// applies.
type Identity struct {
	Server      string          `json:"server"`
	Transport   string          `json:"transport"`
	Command     []string        `json:"command,omitempty"`
	URL         string          `json:"url,omitempty"`
	Tool        string          `json:"tool"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Digest returns "sha256:" and the hex SHA-256 of id's RFC 8785 form.
func (id Identity) Digest() (digest.Digest, error) {
	b, err := json.Marshal(id)
	if err != nil {
		return "", fmt.Errorf("mcp: identity of %s.%s: %w", id.Server, id.Tool, err)
	}
	c, err := journal.Canonicalize(b)
	if err != nil {
		return "", fmt.Errorf("mcp: identity of %s.%s: %w", id.Server, id.Tool, err)
	}
	return digest.FromBytes(c), nil
}

// identity returns the identity of tool name of server sv.
func identity(sv envspec.Tool, name, desc string, schema json.RawMessage) Identity {
	id := Identity{Server: sv.Name, Transport: sv.Transport, Tool: name, Description: desc, InputSchema: schema}
	if sv.Transport == "http" {
		id.URL = sv.URL
	} else {
		id.Command = append([]string{sv.Command}, sv.Args...)
	}
	if len(id.InputSchema) == 0 {
		id.InputSchema = json.RawMessage(`{}`)
	}
	return id
}

// rule returns the effect class and approval rule of tool name of server
// sv: the entry of sv.Tools that names it, each member falling back to
// the server's. What the server says of the tool plays no part.
func rule(sv envspec.Tool, name string) (effect, approval string) {
	effect, approval = sv.Effect, sv.Approval
	if r, ok := sv.Tools[name]; ok {
		if r.Effect != "" {
			effect = r.Effect
		}
		if r.Approval != "" {
			approval = r.Approval
		}
	}
	if effect == "" {
		effect = envspec.EffectExternal
	}
	if approval == "" {
		approval = envspec.ApprovalRequired
	}
	return effect, approval
}

// tool is one tool a server offers: its declaration and what the runtime
// knows of it.
type tool struct {
	remote string // the server's own name for it
	decl   render.Tool
	info   ToolInfo
}

// newTool builds the tool remote of server sv from its declaration.
func newTool(sv envspec.Tool, remote, desc string, schema json.RawMessage) (tool, error) {
	d, err := identity(sv, remote, desc, schema).Digest()
	if err != nil {
		return tool{}, err
	}
	name := sv.Name + "." + remote
	effect, approval := rule(sv, remote)
	params := schema
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	return tool{
		remote: remote,
		decl:   render.Tool{Name: name, Description: desc, Parameters: params},
		info:   ToolInfo{Name: name, Effect: effect, Approval: approval, Digest: d},
	}, nil
}
