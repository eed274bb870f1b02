package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/schema"
)

// Spec is the part of a version-2 environment spec (FORMAT §11.7.1) that
// decides what an agent may do. A version-1 spec is read through the
// schema's up step, so it is seen with the narrowest values that step gives.
type Spec struct {
	// Version is the version of the bytes read, before any migration.
	Version    int               `json:"-"`
	Secrets    []string          `json:"secrets"`
	MCPServers []Server          `json:"mcp_servers"`
	Tools      map[string]Rule   `json:"tools"`
	Mappings   map[string]string `json:"tool_mappings"`
	Sandbox    Sandbox           `json:"sandbox"`
	Lifecycle  Lifecycle         `json:"lifecycle"`
}

// Server is an MCP server of the spec with its default rule and the rules
// of the tools it names.
type Server struct {
	Name     string          `json:"name"`
	Secrets  []string        `json:"secrets"`
	Effect   string          `json:"effect"`
	Approval string          `json:"approval"`
	Tools    map[string]Rule `json:"tools"`
}

// Rule is an effect class (empty for a built-in: the release's) and an
// approval rule.
type Rule struct {
	Effect   string `json:"effect"`
	Approval string `json:"approval"`
}

// Sandbox is the spec's sandbox mode and network.
type Sandbox struct {
	Mode    string   `json:"mode"`
	Network string   `json:"network"`
	Hosts   []string `json:"hosts"`
}

// Lifecycle says whether the agent may be discarded instead of migrated
// (FORMAT §11.9.4).
type Lifecycle struct {
	Ephemeral        bool  `json:"ephemeral"`
	DiscardMaxTokens int64 `json:"discard_max_tokens"`
}

// ParseSpec reads environment/spec.json of version 1 or 2. A version-1
// spec is migrated by the schema's step (which decodes it strictly); the
// version-2 spec is checked against its JSON Schema (envspec.CheckV2). The
// secret rules are the verifier's business, not this package's.
func ParseSpec(b []byte) (*Spec, error) {
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("compat: spec: %w", err)
	}
	v2 := b
	switch head.Version {
	case 1:
		up, err := schema.Up(schema.Environment, 1, 2, b)
		if err != nil {
			return nil, fmt.Errorf("compat: spec: %w", err)
		}
		v2 = up
	case 2:
	default:
		return nil, fmt.Errorf("compat: spec: version %d is not one this build knows (1 or 2)", head.Version)
	}
	if err := envspec.CheckV2(v2); err != nil {
		return nil, fmt.Errorf("compat: spec: %w", err)
	}
	s := &Spec{}
	if err := json.NewDecoder(bytes.NewReader(v2)).Decode(s); err != nil {
		return nil, fmt.Errorf("compat: spec: %w", err)
	}
	s.Version = head.Version
	return s, nil
}

// server returns the server a qualified tool name "server.tool" belongs to.
func (s *Spec) server(name string) (*Server, string, bool) {
	srv, tool, ok := strings.Cut(name, ".")
	if !ok || tool == "" {
		return nil, "", false
	}
	for i := range s.MCPServers {
		if s.MCPServers[i].Name == srv {
			return &s.MCPServers[i], tool, true
		}
	}
	return nil, "", false
}
