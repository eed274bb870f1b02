package journal

import (
	"errors"
	"fmt"
)

// FloorVersion is the oldest envelope version this release reads. Lines of
// every version from FloorVersion to SchemaVersion are read; a line of a
// newer version is kept byte for byte (Event.Raw) and verified by chain
// (docs/FORMAT.md §7.5, §11.6).
const FloorVersion = 1

// ErrKindVersion marks a line whose kind did not exist at its envelope
// version: a version-1 line of a kind journal version 2 adds (FORMAT
// §11.6). Release 0.1.0 kept such a line as an unknown kind, unchecked, so
// it records nothing a release may act on; it must never grant authority.
var ErrKindVersion = errors.New("journal: kind newer than the line's version")

// KindVersionError is returned for a line of a kind its version does not
// have; it names the line so that a caller can report the event.
type KindVersionError struct {
	ID    string // the line's id
	Kind  Kind
	V     int // the line's version
	Since int // the first version that has the kind
}

// Error names the event, its kind and both versions.
func (e *KindVersionError) Error() string {
	return fmt.Sprintf("%v: event %s is a version-%d %s line, a kind of journal version %d; version %d cannot record it",
		ErrKindVersion, e.ID, e.V, e.Kind, e.Since, e.V)
}

// Unwrap returns ErrKindVersion.
func (e *KindVersionError) Unwrap() error { return ErrKindVersion }

// kindsSince holds the kinds added after version 1, with the version that
// added them (FORMAT §11.7.3). Every other kind is of version 1, or unknown
// to this release.
var kindsSince = map[Kind]int{
	"tool_dispatch":    2,
	"approval_request": 2,
	"approval":         2,
	"effect_outcome":   2,
	"tool_mapping":     2,
}

// KindSince returns the journal version that added kind k: 1 for the
// kinds of version 1 and for kinds this release does not know.
func KindSince(k Kind) int {
	if v, ok := kindsSince[k]; ok {
		return v
	}
	return 1
}

// checkKindVersion refuses a line of a kind its version does not have.
func (e *Event) checkKindVersion() error {
	if s := KindSince(e.Kind); e.V < s {
		return &KindVersionError{ID: e.ID, Kind: e.Kind, V: e.V, Since: s}
	}
	return nil
}
