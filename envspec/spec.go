// Package envspec owns environment/spec.json, the description of how to
// rebuild an agent's sandbox: plain environment variables, the NAMES of the
// secrets it needs (never their values), the tools and MCP servers to start,
// the working directory and what the sandbox must provide (docs/FORMAT.md §6).
//
// Every spec is validated against the JSON Schema shipped in this package
// (spec.schema.json, embedded) and against the secret rules: a variable whose
// name looks like a secret, or whose value looks like a credential, is
// refused. The package touches no file system; the capsule package reads
// and writes the bytes. Anyone may import it.
package envspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Version is the environment schema version this release writes (FORMAT
// §11.7.1). Parse also reads version 1, migrating it through package
// schema's step.
const Version = 2

// MaxSize is the largest spec.json Parse accepts, in bytes.
const MaxSize = 1 << 20

// Network is what the sandbox may reach.
type Network string

// The network modes of version 2.
const (
	NetworkNone  Network = "none"  // no network at all
	NetworkHosts Network = "hosts" // only Sandbox.Hosts, through the node's proxy
)

// The effect classes of a tool and its approval rules (FORMAT §11.7.1).
const (
	EffectRead      = "read"
	EffectWorkspace = "workspace"
	EffectExternal  = "external"

	ApprovalRequired = "required"
	ApprovalNever    = "never"
)

// Spec is the decoded environment/spec.json, version 2. A version-1 file
// is migrated to it by Parse with the narrowest authority.
type Spec struct {
	// Version is the environment schema version (Version).
	Version int `json:"version"`
	// Workdir is the working directory inside the sandbox, relative to the
	// workspace root; empty means the root.
	Workdir string `json:"workdir"`
	// Env holds plain environment variables. Names that look like secrets
	// and values that look like credentials are refused.
	Env map[string]string `json:"env"`
	// Secrets lists, sorted, the names of secrets the host supplies at run time.
	Secrets []string `json:"secrets"`
	// Tools lists the MCP servers whose tools the agent is offered, in
	// order (the file's mcp_servers; version 1's tools).
	Tools []Tool `json:"mcp_servers"`
	// Builtins holds the approval rules of built-in tools by name (the
	// file's tools); a built-in's effect class is the release's.
	Builtins map[string]Rule `json:"tools"`
	// ToolMappings maps a tool name the journal may hold to the name that
	// serves it now (a rename).
	ToolMappings map[string]string `json:"tool_mappings"`
	// Sandbox says what the sandbox must provide.
	Sandbox Sandbox `json:"sandbox"`
	// Lifecycle says whether the agent may be discarded instead of migrated.
	Lifecycle Lifecycle `json:"lifecycle"`
	// Memory sets the working memory's cap and the index's embedder; nil
	// (the member absent) means the release's defaults.
	Memory *Memory `json:"memory,omitempty"`
	// Migrated records what a migration from version 1 narrowed; it grants
	// nothing.
	Migrated *Migrated `json:"migrated,omitempty"`
}

// Tool is an MCP server: a process started beside the agent (transport
// stdio) or an endpoint (http). Effect and Approval apply to every tool of
// the server that Tools does not name.
type Tool struct {
	Name      string            `json:"name"`
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	// Secrets names secrets passed to this server's environment only.
	Secrets  []string        `json:"secrets,omitempty"`
	URL      string          `json:"url,omitempty"`
	Effect   string          `json:"effect"`
	Approval string          `json:"approval"`
	Tools    map[string]Rule `json:"tools,omitempty"`
}

// Rule is the effect class and approval rule of one tool.
type Rule struct {
	Effect   string `json:"effect,omitempty"`
	Approval string `json:"approval"`
}

// Sandbox is what the sandbox must provide. Zero limits are the node's defaults.
type Sandbox struct {
	Mode        string   `json:"mode"`
	Network     Network  `json:"network"`
	Hosts       []string `json:"hosts"`
	Packages    []string `json:"packages,omitempty"`
	CPUs        float64  `json:"cpus,omitempty"`
	MemoryMB    int64    `json:"memory_mb,omitempty"`
	WallSeconds int64    `json:"wall_seconds,omitempty"`
	OutputBytes int64    `json:"output_bytes,omitempty"`
	Processes   int64    `json:"processes,omitempty"`
	DiskMB      int64    `json:"disk_mb,omitempty"`
}

// Lifecycle bounds what may be done with an agent instead of migrating it.
type Lifecycle struct {
	Ephemeral        bool  `json:"ephemeral"`
	DiscardMaxTokens int64 `json:"discard_max_tokens,omitempty"`
}

// Migrated is what the up step from version 1 narrowed.
type Migrated struct {
	From    int    `json:"from"`
	Network string `json:"network,omitempty"`
}

// Default returns the spec of a new capsule: no variables, no secrets, no
// servers, no network, sandbox required, not ephemeral.
func Default() *Spec {
	return &Spec{Version: Version, Env: map[string]string{}, Secrets: []string{}, Tools: []Tool{},
		Builtins: map[string]Rule{}, ToolMappings: map[string]string{},
		Sandbox: Sandbox{Mode: "required", Network: NetworkNone, Hosts: []string{}}}
}

// Marshal returns s as spec.json: indented, keys sorted, secrets sorted, a
// final newline. It refuses a spec that Validate rejects, so a credential
// never reaches a file.
func (s *Spec) Marshal() ([]byte, error) {
	c := s.normalized()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("envspec: marshal: %w", err)
	}
	return buf.Bytes(), nil
}

// normalized returns a copy with nil collections made empty and secrets sorted.
func (s *Spec) normalized() *Spec {
	c := *s
	c.Env = copyMap(s.Env)
	c.Secrets = append([]string{}, s.Secrets...)
	sort.Strings(c.Secrets)
	c.Tools = append([]Tool{}, s.Tools...)
	if c.Builtins == nil {
		c.Builtins = map[string]Rule{}
	}
	if c.ToolMappings == nil {
		c.ToolMappings = map[string]string{}
	}
	c.Sandbox.Hosts = append([]string{}, s.Sandbox.Hosts...)
	return &c
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetEnv sets variable name to value, refusing a secret-looking name or a
// credential-looking value (the error never contains the value).
func (s *Spec) SetEnv(name, value string) error {
	if err := CheckVar(name, value); err != nil {
		return err
	}
	if s.hasSecret(name) {
		return fmt.Errorf("%w: %s is declared as a secret; remove it first (capsule env secret rm DIR %s)", ErrConflict, name, name)
	}
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	s.Env[name] = value
	return nil
}

// UnsetEnv removes variable name and reports whether it was set.
func (s *Spec) UnsetEnv(name string) bool {
	_, ok := s.Env[name]
	delete(s.Env, name)
	return ok
}

// AddSecret declares that the agent needs the secret name; the value is
// never stored. It reports whether the name was new.
func (s *Spec) AddSecret(name string) (bool, error) {
	if !validName(name) {
		return false, fmt.Errorf("%w: secret name %q must match [A-Za-z_][A-Za-z0-9_]*", ErrInvalid, clip(name))
	}
	if _, ok := s.Env[name]; ok {
		return false, fmt.Errorf("%w: %s is set as a plain variable; unset it first (capsule env unset DIR %s)", ErrConflict, name, name)
	}
	if s.hasSecret(name) {
		return false, nil
	}
	s.Secrets = append(s.Secrets, name)
	sort.Strings(s.Secrets)
	return true, nil
}

// RemoveSecret removes the secret name and reports whether it was declared.
func (s *Spec) RemoveSecret(name string) bool {
	for i, n := range s.Secrets {
		if n == name {
			s.Secrets = append(s.Secrets[:i], s.Secrets[i+1:]...)
			return true
		}
	}
	return false
}

func (s *Spec) hasSecret(name string) bool {
	for _, n := range s.Secrets {
		if n == name {
			return true
		}
	}
	return false
}

func validName(n string) bool {
	if n == "" || len(n) > 256 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		letter := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
