package compat

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/schema"
)

// versionsFound is the version of each kind: the manifest's schemas, with
// the journal's highest line version and the version members of the spec
// and the index where they are read (a missing member is version 1).
func versionsFound(m manifestHead, in Input, h *history) map[schema.Kind]int {
	found := map[schema.Kind]int{}
	for _, k := range schema.Kinds {
		found[k] = 1
		if v, ok := m.Schemas[string(k)]; ok {
			found[k] = v
		}
	}
	if m.Format > 0 {
		found[schema.Manifest] = max(found[schema.Manifest], m.Format)
	}
	if h.maxV > 0 {
		found[schema.Journal] = h.maxV
	}
	for k, b := range map[schema.Kind][]byte{schema.Environment: in.Spec, schema.MemoryIndex: in.Index} {
		if v, ok := versionMember(b); ok {
			found[k] = v
		}
	}
	return found
}

func versionMember(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var head struct {
		Version *int `json:"version"`
	}
	if json.Unmarshal(b, &head) != nil {
		return 0, false
	}
	if head.Version == nil {
		return 1, true
	}
	return *head.Version, true
}

// addMismatches reports a file whose own version is not the manifest's
// (FORMAT §11.1): the release cannot tell which to trust.
func (rep *Report) addMismatches(m manifestHead, found map[schema.Kind]int) {
	for _, k := range []schema.Kind{schema.Environment, schema.MemoryIndex} {
		if v, ok := m.Schemas[string(k)]; ok && v != found[k] {
			rep.add(Issue{Code: CodeSchema, Action: ActionRefuse, Kind: string(k),
				Message: fmt.Sprintf("%s: the manifest says version %d, the file says %d", k, v, found[k])})
		}
	}
}

// planKind says what release r does with version v of kind k.
func planKind(k schema.Kind, v int, r Release) KindReport {
	rg := r.Reads[k]
	kr := KindReport{Kind: string(k), Found: v, Reads: rg, Steps: []Step{}}
	switch {
	case v == rg.Current:
		kr.Action = ActionRead
	case v >= rg.Floor && v < rg.Current:
		steps, err := schema.Steps(k, v, rg.Current)
		if err != nil {
			kr.Action, kr.Reason = ActionRefuse, err.Error()
			return kr
		}
		kr.Action = ActionMigrate
		for _, s := range steps {
			kr.Steps = append(kr.Steps, Step{From: s.From, To: s.To, Summary: s.Summary, Destructive: s.Destructive})
		}
	default:
		return refuseKind(kr, v, r)
	}
	return kr
}

func refuseKind(kr KindReport, v int, r Release) KindReport {
	kr.Action, kr.Steps = ActionRefuse, []Step{}
	rg := kr.Reads
	if v > rg.Current {
		kr.Reason = fmt.Sprintf("%s schema version %d is newer than release %s reads (up to %d); restore it with a release that reads it", kr.Kind, v, r.Name, rg.Current)
	} else {
		kr.Reason = fmt.Sprintf("%s schema version %d is older than release %s reads (from %d); migrate it with an earlier release first", kr.Kind, v, r.Name, rg.Floor)
	}
	return kr
}
