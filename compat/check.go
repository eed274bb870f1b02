package compat

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/schema"
)

// Input is a capsule's files, as bytes (Journal as a stream, read once).
// Index may be nil; Journal may be nil for an empty journal.
type Input struct {
	Manifest []byte
	Spec     []byte
	Index    []byte
	Journal  io.Reader
}

// manifestHead is what Check reads of the manifest. It decodes leniently:
// a manifest of a newer format is reported, not refused before reading.
type manifestHead struct {
	Format  int            `json:"format"`
	Schemas map[string]int `json:"schemas"`
	Writer  struct {
		Release string `json:"release"`
	} `json:"writer"`
}

// Check says what release r does with the capsule in: per kind the version
// found and the steps that would run, every semantic issue, and whether
// restore would refuse. It reads, never writes; events it proposes (a
// tool_mapping) are in Report.Append for the caller to append. It does not
// check digests: capsule verify does.
func Check(in Input, r Release) (*Report, error) {
	var m manifestHead
	if err := json.Unmarshal(in.Manifest, &m); err != nil {
		return nil, fmt.Errorf("compat: manifest.json: %w", err)
	}
	rep := &Report{Release: r.Name, Writer: m.Writer.Release, Kinds: []KindReport{}, Issues: []Issue{}, Append: []Append{}}
	h := readHistory(in.Journal)
	found := versionsFound(m, in, h)
	rep.planKinds(found, h, r)
	rep.addMismatches(m, found)
	if h.parseProblem != nil {
		rep.add(Issue{Code: CodeJournal, Action: ActionRefuse, Kind: string(schema.Journal), Events: []string{},
			Message: fmt.Sprintf("the journal does not read after %d events: %v; run capsule log verify", h.events, h.parseProblem)})
	}
	for _, id := range h.v1Authority {
		rep.add(Issue{Code: CodeV1Authority, Action: ActionRefuse, Kind: string(schema.Journal), Events: []string{id},
			Message: fmt.Sprintf("event %s is a version-1 line of a kind journal version 2 adds; it was written unchecked and grants nothing (FORMAT §11.6)", id)})
	}
	rep.semantic(in, h, r)
	return rep, nil
}

// planKinds plans every kind of a capsule. The journal's lines keep the
// version they were written with (FORMAT §11.6), so its steps start at the
// lowest line version, and a line above what the release reads refuses it.
func (rep *Report) planKinds(found map[schema.Kind]int, h *history, r Release) {
	for _, k := range schema.Kinds {
		kr := planKind(k, found[k], r)
		if k == schema.Journal && h.minV > 0 {
			kr = planKind(k, h.minV, r)
			kr.Found, kr.Min = h.maxV, h.minV
			if h.maxV > r.Reads[k].Current {
				kr = refuseKind(kr, h.maxV, r)
			}
		}
		rep.Kinds = append(rep.Kinds, kr)
		if kr.Action == ActionRefuse {
			rep.add(Issue{Code: CodeSchema, Action: ActionRefuse, Kind: string(k), Message: kr.Reason})
		}
	}
}

func (rep *Report) add(is Issue) {
	if is.Events == nil {
		is.Events = []string{}
	}
	rep.Issues = append(rep.Issues, is)
	if is.Action == ActionRefuse {
		rep.Refused = true
	}
}

// semantic adds the issues of the spec and the journal read together.
func (rep *Report) semantic(in Input, h *history, r Release) {
	spec, err := ParseSpec(in.Spec)
	if err != nil {
		rep.add(Issue{Code: CodeSpec, Action: ActionRefuse, Kind: string(schema.Environment), Message: err.Error()})
		return
	}
	rep.addAuthority(in.Spec, spec.Version, r)
	tools, appends, applied := toolIssues(h, spec, r, r.Reads[schema.Journal].Current)
	for _, is := range tools {
		rep.add(is)
	}
	rep.Append = append(rep.Append, appends...)
	for _, is := range checkIssues(h, spec, r, applied, string(digest.FromBytes(in.Spec))) {
		rep.add(is)
	}
}

// addAuthority refuses a migration of the spec that the release would run
// and that would widen the agent's authority (FORMAT §11.9.2).
func (rep *Report) addAuthority(b []byte, v int, r Release) {
	to := r.Reads[schema.Environment].Current
	if v >= to || v < r.Reads[schema.Environment].Floor {
		return
	}
	up, err := upSpec(v, to, b)
	if err != nil {
		rep.add(Issue{Code: CodeSpec, Action: ActionRefuse, Kind: string(schema.Environment), Message: err.Error()})
		return
	}
	wide, err := MigrationWidens(b, up, r)
	if err != nil {
		rep.add(Issue{Code: CodeSpec, Action: ActionRefuse, Kind: string(schema.Environment), Message: err.Error()})
		return
	}
	if len(wide) > 0 {
		rep.add(Issue{Code: CodeAuthority, Action: ActionRefuse, Kind: string(schema.Environment),
			Message: fmt.Sprintf("migrating the spec from version %d to %d would grant %v, which version %d did not", v, to, wide, v)})
	}
}

// upSpec migrates a spec; a test replaces it with a step that widens.
var upSpec = func(from, to int, b []byte) ([]byte, error) { return schema.Up(schema.Environment, from, to, b) }

// MigrationWidens returns what the spec after grants that the spec before
// did not, under release r.
func MigrationWidens(before, after []byte, r Release) ([]Grant, error) {
	a, err := AuthorityOf(before, r)
	if err != nil {
		return nil, err
	}
	b, err := AuthorityOf(after, r)
	if err != nil {
		return nil, err
	}
	return Widened(a, b), nil
}
