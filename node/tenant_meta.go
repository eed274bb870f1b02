package node

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/schema"
)

// metaFile is agent.json as stored: agentMeta with the schema version of
// kind agent_meta and the release that wrote it (FORMAT §11.1). A file
// without "v" was written by 0.1.0 and is version 1.
type metaFile struct {
	V       *int   `json:"v,omitempty"`
	Release string `json:"release,omitempty"`
	agentMeta
}

// encodeMeta returns the bytes of agent.json for m, at the version this
// release writes.
func encodeMeta(m agentMeta) ([]byte, error) {
	v := schema.Current[schema.AgentMeta]
	b, err := json.MarshalIndent(metaFile{V: &v, Release: schema.Release, agentMeta: m}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// decodeMeta reads agent.json: its version first, then its members. A
// version this release does not read is a *schema.VersionError naming the
// version and the writer; the caller keeps the file as it is.
func decodeMeta(b []byte) (agentMeta, error) {
	var f metaFile
	if err := json.Unmarshal(b, &f); err != nil {
		return agentMeta{}, fmt.Errorf("%s: %w", agentMetaFile, err)
	}
	v := 1
	if f.V != nil {
		v = *f.V
	}
	plan, err := schema.PlanRead(schema.AgentMeta, v, f.Release)
	if err != nil {
		return agentMeta{}, fmt.Errorf("%s: %w", agentMetaFile, err)
	}
	if plan.Action == schema.Migrate {
		// Read through the steps in memory; the file is rewritten at the
		// current version by the next save, never here.
		for _, st := range plan.Steps {
			if b, err = st.Apply(b); err != nil {
				return agentMeta{}, fmt.Errorf("%s: migrate %d to %d: %w", agentMetaFile, st.From, st.To, err)
			}
		}
		var m metaFile
		if err := json.Unmarshal(b, &m); err != nil {
			return agentMeta{}, fmt.Errorf("%s: migrated: %w", agentMetaFile, err)
		}
		return m.agentMeta, nil
	}
	return f.agentMeta, nil
}
