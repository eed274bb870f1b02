package agent

import (
	"encoding/json"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// Approval rules of a tool (FORMAT §11.7.1).
const (
	ApprovalRequired = "required"
	ApprovalNever    = "never"
)

// ToolInfo is what the runtime must know of a tool before it runs it: its
// effect class (journal.EffectRead, EffectWorkspace or EffectExternal),
// its approval rule (ApprovalRequired or ApprovalNever) and the digest of
// its identity and schema (ToolDigest), which an approval binds to.
type ToolInfo struct {
	Name, Effect, Approval, Digest string
}

// Described is a Toolbox that can describe its tools. A tool it does not
// describe (the Toolbox is not Described, or Info reports false) gets the
// narrowest values: effect external, approval required.
type Described interface {
	// Info returns the description of the tool name, false when the
	// Toolbox does not know it.
	Info(name string) (ToolInfo, bool)
}

// Describe returns what tb says of the tool name, with every value it
// leaves out or spells in an unknown way at its narrowest: effect
// external, approval required, and the digest of the declaration tb
// offers (or of the name alone when it offers none).
func Describe(tb Toolbox, name string) ToolInfo {
	var info ToolInfo
	if d, ok := tb.(Described); ok {
		if i, ok := d.Info(name); ok {
			info = i
		}
	}
	info.Name = name
	switch info.Effect {
	case journal.EffectRead, journal.EffectWorkspace:
	default:
		info.Effect = journal.EffectExternal
	}
	if info.Approval != ApprovalNever {
		info.Approval = ApprovalRequired
	}
	if info.Digest == "" {
		info.Digest = ToolDigest(declaration(tb, name))
	}
	return info
}

// declaration returns the declaration tb offers for name, or one that
// holds the name alone.
func declaration(tb Toolbox, name string) render.Tool {
	if tb != nil {
		for _, t := range tb.Tools() {
			if t.Name == name {
				return t
			}
		}
	}
	return render.Tool{Name: name}
}

// ToolDigest is the digest of a tool's identity and schema: the SHA-256
// of the canonical JSON (RFC 8785) of {"name", "description",
// "parameters"} of its declaration. A tool whose description or schema
// changed is another tool to an approval.
func ToolDigest(t render.Tool) string {
	params := t.Parameters
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}{t.Name, t.Description, params})
	if err != nil { // parameters that are not JSON: digest them as text
		b, _ = json.Marshal([]string{t.Name, t.Description, string(t.Parameters)})
	}
	return canonicalDigest(b)
}

// ArgumentsDigest is the digest of a call's arguments: the SHA-256 of
// their canonical JSON (RFC 8785); absent arguments are {}.
func ArgumentsDigest(args json.RawMessage) string {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return canonicalDigest(args)
}

// SpecDigest is the digest of the environment spec in force: the SHA-256
// of environment/spec.json as the capsule holds it (FORMAT §11.9.3).
func SpecDigest(spec []byte) string { return string(digest.FromBytes(spec)) }

func canonicalDigest(b []byte) string {
	c, err := journal.Canonicalize(b)
	if err != nil {
		c = b
	}
	return string(digest.FromBytes(c))
}
