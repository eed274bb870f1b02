package authority

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/schema"
)

// The kinds of the records this package stores, each at version 1. They
// follow FORMAT §11: every record carries its version "v" and the release
// that wrote it, and a reader refuses a version it does not read with a
// *schema.VersionError naming both.
const (
	AgentKind     schema.Kind = "fleet_agent"
	NodeKind      schema.Kind = "fleet_node"
	AdmissionKind schema.Kind = "fleet_admission"
	CordonKind    schema.Kind = "fleet_cordon"
	recordVersion             = 1
)

// header is what every stored record begins with.
type header struct {
	V       int    `json:"v"`
	Release string `json:"release"`
}

// agentRecord is an agent's key as stored.
type agentRecord struct {
	header
	Agent string `json:"agent"`
	Holding
}

// EncodeHolding returns the stored bytes of agent's key holding h, at the
// version this release writes.
func EncodeHolding(agent string, h Holding) ([]byte, error) {
	b, err := json.Marshal(agentRecord{header: newHeader(), Agent: agent, Holding: h})
	if err != nil {
		return nil, fmt.Errorf("authority: encode %s: %w", agent, err)
	}
	return b, nil
}

// DecodeHolding reads the stored bytes of agent's key. A record of a
// version this release does not read, of another agent, or with an
// unknown state is refused.
func DecodeHolding(agent string, b []byte) (Holding, error) {
	var r agentRecord
	if err := decode(AgentKind, b, &r, &r.header); err != nil {
		return Holding{}, fmt.Errorf("authority: agent %s: %w", agent, err)
	}
	if r.Agent != agent {
		return Holding{}, fmt.Errorf("authority: agent %s: record names agent %q", agent, r.Agent)
	}
	if !r.State.Valid() {
		return Holding{}, fmt.Errorf("authority: agent %s: unknown state %q", agent, r.State)
	}
	return r.Holding, nil
}

func newHeader() header {
	return header{V: recordVersion, Release: schema.Release}
}

// decode unmarshals b into rec and checks the version its header holds.
func decode(kind schema.Kind, b []byte, rec any, h *header) error {
	if err := json.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	if h.V != recordVersion {
		return &schema.VersionError{Kind: kind, Got: h.V, Writer: h.Release, Floor: recordVersion, Max: recordVersion}
	}
	return nil
}

func encodeJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("authority: encode: %w", err)
	}
	return b, nil
}

// markKind maps "admission" and "cordon" to their kinds.
func markKind(kind string) schema.Kind {
	if kind == "cordon" {
		return CordonKind
	}
	return AdmissionKind
}
