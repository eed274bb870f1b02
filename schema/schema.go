// Package schema owns the version of each kind of state Capsule stores, the
// release that writes them, and (in a later issue) the migrations between
// versions. It is imported by every package that writes a versioned record.
package schema

// Release is the version of this build of Capsule, recorded as the writer of
// every record it stores.
const Release = "0.1.0"

// Kind names one kind of state with its own schema version.
type Kind string

// The kinds of state, each versioned on its own (docs/FORMAT.md, "Schema versions").
const (
	Manifest     Kind = "manifest"
	Journal      Kind = "journal"
	Session      Kind = "session"
	MemoryIndex  Kind = "memory_index"
	Environment  Kind = "environment"
	Snapshot     Kind = "snapshot"
	Coordination Kind = "coordination"
)

// Kinds lists every kind in a fixed order.
var Kinds = []Kind{Manifest, Journal, Session, MemoryIndex, Environment, Snapshot, Coordination}

// Current is the version of each kind this release writes and reads.
var Current = map[Kind]int{
	Manifest:     1,
	Journal:      1,
	Session:      1,
	MemoryIndex:  1,
	Environment:  1,
	Snapshot:     1,
	Coordination: 1,
}

// CanRead reports whether this release can read version v of kind k.
func CanRead(k Kind, v int) bool {
	cur, ok := Current[k]
	return ok && v >= 1 && v <= cur
}
