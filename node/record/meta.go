package record

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/schema"
)

// MetaFile is the agent metadata file inside the agent's folder.
const MetaFile = "agent.json"

// Meta is what DATA/agents/<id>/agent.json (MetaFile) records of an
// agent: its name and what the operator asked of it.
type Meta struct {
	Name string `json:"name,omitempty"`
	Run  bool   `json:"run"` // the operator wants it running (start/stop)
	// Removed is set by `capsule agent rm`: the operator removed the copy
	// while the node had seen epochs up to RemovedAt. The agent is listed
	// again once the node sees a newer epoch (a move brings it back).
	Removed   bool   `json:"removed,omitempty"`
	RemovedAt uint64 `json:"removed_at,omitempty"`
	// BaseURL is where this node reaches the agent's current model
	// (`capsule agent model --base-url`): a fact of this host, never in
	// the capsule, and not carried by a move.
	BaseURL string `json:"base_url,omitempty"`
}

// metaFile is agent.json as stored: Meta with the schema version of
// kind agent_meta and the release that wrote it (FORMAT §11.1). A file
// without "v" was written by 0.1.0 and is version 1.
type metaFile struct {
	V       *int   `json:"v,omitempty"`
	Release string `json:"release,omitempty"`
	Meta
}

// EncodeMeta returns the bytes of agent.json for m, at the version this
// release writes.
func EncodeMeta(m Meta) ([]byte, error) {
	v := schema.Current[schema.AgentMeta]
	b, err := json.MarshalIndent(metaFile{V: &v, Release: schema.Release, Meta: m}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// DecodeMeta reads agent.json: its version first, then its members. A
// version this release does not read is a *schema.VersionError naming the
// version and the writer; the caller keeps the file as it is.
func DecodeMeta(b []byte) (Meta, error) {
	var f metaFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Meta{}, fmt.Errorf("%s: %w", MetaFile, err)
	}
	v := 1
	if f.V != nil {
		v = *f.V
	}
	plan, err := schema.PlanRead(schema.AgentMeta, v, f.Release)
	if err != nil {
		return Meta{}, fmt.Errorf("%s: %w", MetaFile, err)
	}
	if plan.Action == schema.Migrate {
		// Read through the steps in memory; the file is rewritten at the
		// current version by the next save, never here.
		for _, st := range plan.Steps {
			if b, err = st.Apply(b); err != nil {
				return Meta{}, fmt.Errorf("%s: migrate %d to %d: %w", MetaFile, st.From, st.To, err)
			}
		}
		var m metaFile
		if err := json.Unmarshal(b, &m); err != nil {
			return Meta{}, fmt.Errorf("%s: migrated: %w", MetaFile, err)
		}
		return m.Meta, nil
	}
	return f.Meta, nil
}
