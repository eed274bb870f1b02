package schema

import (
	"errors"
	"fmt"
)

// Action is what a reader does with a record (FORMAT §11.4).
type Action int

// The actions.
const (
	Read    Action = iota // the version this release writes: read it
	Migrate               // older, at or above the floor: migrate through Steps
)

// Plan is how this release reads one record.
type Plan struct {
	Kind   Kind
	From   int
	Action Action
	// Steps take the record from its version to the current one; none for Read.
	Steps []Step
	// Destructive is set when a step drops or narrows information, so the
	// original must be kept (FORMAT §11.5).
	Destructive bool
}

// VersionError is a refusal to read a record: its kind, the version found,
// the release that wrote it (when the record names one), and what this
// release reads. Its message says which release reads it.
type VersionError struct {
	Kind   Kind
	Got    int
	Writer string // "" when the record names no writer
	Floor  int
	Max    int
}

// ErrRefused is matched by every *VersionError.
var ErrRefused = errors.New("schema: version refused")

func (e *VersionError) Error() string {
	by := ""
	if e.Writer != "" {
		by = " (written by " + e.Writer + ")"
	}
	switch {
	case e.Got > e.Max:
		return fmt.Sprintf("%s schema version %d%s is newer than release %s reads (up to %d); upgrade capsule", e.Kind, e.Got, by, Release, e.Max)
	case e.Got < 1:
		return fmt.Sprintf("%s schema version %d%s is not a version", e.Kind, e.Got, by)
	default:
		return fmt.Sprintf("%s schema version %d%s is older than release %s reads (from %d); read it with %s, or migrate it with that release first",
			e.Kind, e.Got, by, Release, e.Floor, lastReader(e.Kind, e.Got))
	}
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *VersionError) Unwrap() error { return ErrRefused }

// lastReader names the releases that read version v of k, from the
// history: the release that wrote v onwards, up to the one before the
// floor rose above it.
func lastReader(k Kind, v int) string {
	h := registry[k]
	if v >= 1 && v <= len(h.Versions) && h.Versions[v-1].Since != "" {
		return "release " + h.Versions[v-1].Since + " or a later release whose floor is at most " + fmt.Sprint(v)
	}
	return "an earlier release"
}

// PlanRead identifies how this release reads a record of kind k at version
// v written by release writer ("" when unknown): read it, migrate it, or a
// *VersionError. A record without a version member is version 1 (FORMAT
// §11.1); the caller passes 1 for it.
func PlanRead(k Kind, v int, writer string) (Plan, error) {
	h, ok := registry[k]
	if !ok {
		return Plan{}, fmt.Errorf("%w: %q", ErrUnknownKind, k)
	}
	if v < h.Floor || v > h.Current {
		return Plan{}, &VersionError{Kind: k, Got: v, Writer: writer, Floor: h.Floor, Max: h.Current}
	}
	if v == h.Current {
		return Plan{Kind: k, From: v, Action: Read}, nil
	}
	steps, err := Steps(k, v, h.Current)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Kind: k, From: v, Action: Migrate, Steps: steps}
	for _, s := range steps {
		p.Destructive = p.Destructive || s.Destructive
	}
	return p, nil
}
