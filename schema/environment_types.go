package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Frozen copies of the environment spec's versions (FORMAT §6, §11.7). The
// steps decode and encode these, never envspec's live types, so a later
// change to envspec cannot change what a step does.

// specV1 is environment/spec.json version 1, encoded as envspec.Marshal of
// 0.1.0 encodes it.
type specV1 struct {
	Version int               `json:"version"`
	Workdir string            `json:"workdir"`
	Env     map[string]string `json:"env"`
	Secrets []string          `json:"secrets"`
	Tools   []toolV1          `json:"tools"`
	Sandbox sandboxV1         `json:"sandbox"`
}

type toolV1 struct {
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Secrets []string          `json:"secrets,omitempty"`
}

type sandboxV1 struct {
	Network  string   `json:"network"`
	Packages []string `json:"packages,omitempty"`
	CPUs     float64  `json:"cpus,omitempty"`
	MemoryMB int64    `json:"memory_mb,omitempty"`
}

// specV2 is environment/spec.json version 2.
type specV2 struct {
	Version int               `json:"version"`
	Workdir string            `json:"workdir"`
	Env     map[string]string `json:"env"`
	Secrets []string          `json:"secrets"`
	// MCPServers are the processes (stdio) and endpoints (http) whose tools
	// the agent is offered, in order.
	MCPServers []mcpServerV2 `json:"mcp_servers"`
	// Tools holds approval rules of built-in tools by name; a built-in's
	// effect class is the release's.
	Tools map[string]ruleV2 `json:"tools"`
	// ToolMappings maps a tool name the journal may hold to the name that
	// now serves it (a rename); applying one is journaled.
	ToolMappings map[string]string `json:"tool_mappings"`
	Sandbox      sandboxV2         `json:"sandbox"`
	Lifecycle    lifecycleV2       `json:"lifecycle"`
	// Memory is the OPTIONAL memory member (working memory cap, embedder);
	// version 1 has no place for it and the down step drops it.
	Memory json.RawMessage `json:"memory,omitempty"`
	// Migrated records what a migration from version 1 narrowed. It grants
	// nothing; the down step reads it.
	Migrated *migratedV2 `json:"migrated,omitempty"`
}

type mcpServerV2 struct {
	Name      string            `json:"name"`
	Transport string            `json:"transport"` // stdio or http
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Secrets   []string          `json:"secrets,omitempty"`
	URL       string            `json:"url,omitempty"`
	// Effect and Approval apply to every tool of the server that Tools does
	// not name.
	Effect   string            `json:"effect"`
	Approval string            `json:"approval"`
	Tools    map[string]ruleV2 `json:"tools,omitempty"`
}

type ruleV2 struct {
	Effect   string `json:"effect,omitempty"`
	Approval string `json:"approval"`
}

type sandboxV2 struct {
	Mode        string   `json:"mode"`    // required or none
	Network     string   `json:"network"` // none or hosts
	Hosts       []string `json:"hosts"`   // host:port, reached through the node's proxy
	Packages    []string `json:"packages,omitempty"`
	CPUs        float64  `json:"cpus,omitempty"`
	MemoryMB    int64    `json:"memory_mb,omitempty"`
	WallSeconds int64    `json:"wall_seconds,omitempty"`
	OutputBytes int64    `json:"output_bytes,omitempty"`
	Processes   int64    `json:"processes,omitempty"`
	DiskMB      int64    `json:"disk_mb,omitempty"`
}

type lifecycleV2 struct {
	Ephemeral        bool  `json:"ephemeral"`
	DiscardMaxTokens int64 `json:"discard_max_tokens,omitempty"`
}

type migratedV2 struct {
	From    int    `json:"from"`
	Network string `json:"network,omitempty"` // the version-1 network, narrowed to none
}

// The values of effect classes, approval rules, transports, sandbox modes
// and networks.
const (
	EffectRead      = "read"
	EffectWorkspace = "workspace"
	EffectExternal  = "external"

	ApprovalRequired = "required"
	ApprovalNever    = "never"
)

// decodeStrict decodes one JSON value into v, refusing unknown members and
// trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrInput, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the object", ErrInput)
	}
	return nil
}

// encodeIndented encodes v as the spec writers do: two-space indentation,
// map keys sorted, no HTML escaping, one final newline.
func encodeIndented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("schema: encode: %w", err)
	}
	return buf.Bytes(), nil
}

func nonNilMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
