package compat

import (
	"encoding/json"
	"errors"
)

// ErrUnknownRelease is returned for a release name no release has.
var ErrUnknownRelease = errors.New("compat: unknown release")

// What a release does with a kind, or with an issue.
const (
	ActionRead    = "read"    // the version the release writes: read as it is
	ActionMigrate = "migrate" // older, at or above the floor: migrate through the steps
	ActionRefuse  = "refuse"  // restore is refused
	ActionCheck   = "check"   // resume must run a check first (request an approval)
	ActionMap     = "map"     // resume applies a mapping and journals it first
)

// Issue codes (FORMAT §11.9).
const (
	CodeSchema         = "schema"          // a version the release cannot read
	CodeJournal        = "journal"         // a journal line that does not parse
	CodeSpec           = "spec"            // a spec that does not parse
	CodeV1Authority    = "v1_authority"    // a version-1 line of a kind version 2 adds
	CodeToolMissing    = "tool_missing"    // a tool named by the journal that nothing serves
	CodeToolMapped     = "tool_mapped"     // a tool served through a declared mapping
	CodeAuthority      = "authority"       // a migration would widen authority
	CodeCheckSkipped   = "check_skipped"   // a call ran without a check its rule now requires
	CodeApprovalNeeded = "approval_needed" // a call that has not run needs an approval first
	CodeApprovalStale  = "approval_stale"  // an approval given under another spec
)

// Issue is one finding: its code, what restore or resume does about it, the
// tool and the events it concerns, and a message saying what to do.
type Issue struct {
	Code    string   `json:"code"`
	Action  string   `json:"action"`
	Kind    string   `json:"kind,omitempty"`
	Tool    string   `json:"tool,omitempty"`
	Events  []string `json:"events"`
	Message string   `json:"message"`
}

// Append is an event the caller appends to the journal before resuming,
// sealed by its own writer at journal version V.
type Append struct {
	Kind string          `json:"kind"`
	V    int             `json:"v"`
	Body json.RawMessage `json:"body"`
}

// Step is one migration step a kind would go through.
type Step struct {
	From        int    `json:"from"`
	To          int    `json:"to"`
	Summary     string `json:"summary"`
	Destructive bool   `json:"destructive"`
}

// KindReport is what the release does with one kind: the version found
// (for the journal, the highest line version, and Min the lowest), the
// writer the manifest names, and the steps that would run.
type KindReport struct {
	Kind   string `json:"kind"`
	Found  int    `json:"found"`
	Min    int    `json:"min,omitempty"`
	Reads  Range  `json:"reads"`
	Action string `json:"action"`
	Steps  []Step `json:"steps"`
	Reason string `json:"reason,omitempty"`
}

// Report is the answer of Check.
type Report struct {
	Release string       `json:"release"`
	Writer  string       `json:"writer"`
	Kinds   []KindReport `json:"kinds"`
	Issues  []Issue      `json:"issues"`
	// Append lists the events resume appends before it runs (tool_mapping).
	Append []Append `json:"append"`
	// Refused is set when restore would refuse: a kind or an issue whose
	// action is refuse.
	Refused bool `json:"refused"`
}
