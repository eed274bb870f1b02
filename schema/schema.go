// Package schema owns the version of each kind of state Capsule stores, the
// release that writes them, and the migrations between versions: per kind,
// the ordered versions with a one-line summary each, the floor (the oldest
// version this release reads), the version it writes, and the steps between
// versions, each a pure function from the bytes of one version to the bytes
// of the next (docs/FORMAT.md §11).
//
// It is imported by every package that writes a versioned record, and it is
// pure: no file system, network, clock or randomness.
package schema

// Release is the version of this build of Capsule, recorded as the writer of
// every record it stores. It is the one place the release string comes from
// (docs/RELEASES.md lists every release with its commit).
const Release = "0.3.0"

// Kind names one kind of state with its own schema version.
type Kind string

// The kinds of state a capsule holds, each versioned on its own
// (docs/FORMAT.md §11). The manifest records the version of every one.
const (
	Manifest     Kind = "manifest"
	Journal      Kind = "journal"
	Session      Kind = "session"
	MemoryIndex  Kind = "memory_index"
	Environment  Kind = "environment"
	Snapshot     Kind = "snapshot"
	Coordination Kind = "coordination"
)

// The kinds of state a node stores in its data folder (node/node.go lists
// the layout). A record of one of them without a version member is a
// version-1 record written by 0.1.0.
const (
	HolderLog  Kind = "holder_log"  // agents/<id>/holder.jsonl
	SourceLog  Kind = "source_log"  // agents/<id>/source.jsonl
	AgentMeta  Kind = "agent_meta"  // agents/<id>/agent.json
	Shadow     Kind = "shadow"      // agents/<id>/shadow.json
	StatCache  Kind = "stat_cache"  // agents/<id>/statcache.json
	Peers      Kind = "peers"       // peers.json
	HostRecord Kind = "host_record" // node.lock.json
	NodeKey    Kind = "node_key"    // node.key
	Secrets    Kind = "secrets"     // secrets.json
	ToolMark   Kind = "tool_mark"   // agents/<id>/tool-running.json
)

// Kinds lists the kinds of a capsule in a fixed order: exactly the members
// of the manifest's schemas object.
var Kinds = []Kind{Manifest, Journal, Session, MemoryIndex, Environment, Snapshot, Coordination}

// NodeKinds lists the kinds of a node's data folder in a fixed order.
var NodeKinds = []Kind{HolderLog, SourceLog, AgentMeta, Shadow, StatCache, Peers, HostRecord, NodeKey, Secrets, ToolMark}

// AllKinds lists every kind: Kinds, then NodeKinds.
func AllKinds() []Kind { return append(append([]Kind{}, Kinds...), NodeKinds...) }

// Current is the version of each kind this release writes, and the newest
// it reads. Versions above it that the registry defines (Newest) are
// designed, with their steps, but not yet written.
var Current = currentVersions()

func currentVersions() map[Kind]int {
	m := make(map[Kind]int, len(registry))
	for k, h := range registry {
		m[k] = h.Current
	}
	return m
}

// CanRead reports whether this release can read version v of kind k: from
// the kind's floor up to its current version.
func CanRead(k Kind, v int) bool {
	h, ok := registry[k]
	return ok && v >= h.Floor && v <= h.Current
}
