package schema

import (
	"errors"
	"fmt"
)

// Version is one version of a kind.
type Version struct {
	// N is the version number, from 1.
	N int
	// Summary says in one line what the version is or what it changed.
	Summary string
	// Since is the release that first wrote it; "" for a version that is
	// designed, with its steps, but that no release writes yet.
	Since string
}

// History is what this release knows of one kind.
type History struct {
	Kind Kind
	// Where says which file or record holds the kind, and where its
	// version is recorded.
	Where string
	// Versions are in order, N = 1, 2, 3….
	Versions []Version
	// Floor is the oldest version this release reads (migrating it).
	Floor int
	// Current is the version this release writes.
	Current int
}

// Newest is the highest version the history defines.
func (h History) Newest() int { return len(h.Versions) }

// Step converts the bytes of one version of a kind into the bytes of the
// adjacent version. Up steps go from N to N+1, down steps from N+1 to N.
type Step struct {
	Kind     Kind
	From, To int
	// Summary says in one line what the step does.
	Summary string
	// Destructive is set when the step drops or narrows information, so the
	// original bytes must be kept to undo it (FORMAT §11.5).
	Destructive bool
	// Apply is pure: the same bytes give the same result or the same error.
	Apply func([]byte) ([]byte, error)
}

// Errors of the registry and of migrations.
var (
	// ErrUnknownKind is returned for a kind this release does not know.
	ErrUnknownKind = errors.New("schema: unknown kind")
	// ErrNoPath is returned when no chain of steps joins two versions.
	ErrNoPath = errors.New("schema: no migration path")
	// ErrBrokenChain is returned by Check for a registry with a gap.
	ErrBrokenChain = errors.New("schema: broken chain")
	// ErrNotExpressible is returned by a step whose input holds something
	// the target version cannot say without widening or losing authority.
	ErrNotExpressible = errors.New("schema: not expressible in the target version")
	// ErrInput is returned by a step for bytes that are not a valid record
	// of the version it reads.
	ErrInput = errors.New("schema: invalid input")
)

// ups and downs hold the steps by kind and source version; each step's own
// file registers it.
var (
	ups   = map[Kind]map[int]Step{}
	downs = map[Kind]map[int]Step{}
)

func register(s Step) {
	m := ups
	if s.To < s.From {
		m = downs
	}
	if m[s.Kind] == nil {
		m[s.Kind] = map[int]Step{}
	}
	if _, dup := m[s.Kind][s.From]; dup {
		panic(fmt.Sprintf("schema: two steps from %s version %d", s.Kind, s.From))
	}
	m[s.Kind][s.From] = s
}

// Newest is the highest version of kind k the registry defines, 0 for an
// unknown kind.
func Newest(k Kind) int { return registry[k].Newest() }

// Lookup returns the history of kind k.
func Lookup(k Kind) (History, bool) {
	h, ok := registry[k]
	return h, ok
}

// Histories returns the history of every kind, in AllKinds order.
func Histories() []History {
	out := make([]History, 0, len(registry))
	for _, k := range AllKinds() {
		out = append(out, registry[k])
	}
	return out
}

// Steps returns the up steps that take kind k from version from to version
// to, in order (none when from == to).
func Steps(k Kind, from, to int) ([]Step, error) {
	h, ok := registry[k]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, k)
	}
	if from < h.Floor || to > h.Newest() || from > to {
		return nil, fmt.Errorf("%w: %s version %d to %d (this release reads %d to %d)", ErrNoPath, k, from, to, h.Floor, h.Newest())
	}
	return chain(ups[k], k, from, to, 1)
}

// DownSteps returns the down steps that take kind k from version from down
// to version to, in order.
func DownSteps(k Kind, from, to int) ([]Step, error) {
	if _, ok := registry[k]; !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, k)
	}
	if to > from {
		return nil, fmt.Errorf("%w: %s version %d down to %d", ErrNoPath, k, from, to)
	}
	return chain(downs[k], k, from, to, -1)
}

func chain(m map[int]Step, k Kind, from, to, dir int) ([]Step, error) {
	var out []Step
	for v := from; v != to; v += dir {
		s, ok := m[v]
		if !ok || s.To != v+dir {
			return nil, fmt.Errorf("%w: %s has no step from version %d to %d", ErrNoPath, k, v, v+dir)
		}
		out = append(out, s)
	}
	return out, nil
}

// Up migrates b, a record of kind k at version from, to version to through
// every step between them. The input is never changed.
func Up(k Kind, from, to int, b []byte) ([]byte, error) {
	steps, err := Steps(k, from, to)
	if err != nil {
		return nil, err
	}
	return run(steps, b)
}

// Down converts b, a record of kind k at version from, down to version to.
func Down(k Kind, from, to int, b []byte) ([]byte, error) {
	steps, err := DownSteps(k, from, to)
	if err != nil {
		return nil, err
	}
	return run(steps, b)
}

func run(steps []Step, b []byte) ([]byte, error) {
	out := append([]byte(nil), b...)
	for _, s := range steps {
		next, err := s.Apply(out)
		if err != nil {
			return nil, fmt.Errorf("schema: %s version %d to %d: %w", s.Kind, s.From, s.To, err)
		}
		out = next
	}
	return out, nil
}

// Destructive reports whether any up step from version from to version to
// of kind k is destructive, so that its original bytes must be kept.
func Destructive(k Kind, from, to int) (bool, error) {
	steps, err := Steps(k, from, to)
	if err != nil {
		return false, err
	}
	for _, s := range steps {
		if s.Destructive {
			return true, nil
		}
	}
	return false, nil
}
