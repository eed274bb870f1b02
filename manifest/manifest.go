// Package manifest owns manifest.json, the root of a capsule: the agent's
// identity, its holder, the schema version of every kind of state, the build
// that wrote it, the committed journal, and a digest and size for every other
// file of the capsule's layout (docs/FORMAT.md §2 and §3).
//
// The package is pure: it never touches the file system, the network or the
// clock, so it is safe to import from anywhere (the capsule package reads and
// writes the bytes; archive and transfer inspect them). Parse is strict and
// names every problem it finds; Marshal is deterministic.
package manifest

import (
	"encoding/json"
	"sort"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/schema"
)

// FormatVersion is the manifest format this release writes (FORMAT §2).
// It is also the manifest's entry in Schemas.
const FormatVersion = 1

// MaxSize is the largest manifest.json Parse accepts, in bytes (FORMAT §2).
const MaxSize = 16 << 20

// The layout of a capsule folder (FORMAT §1). Paths inside a capsule always
// use forward slashes and are relative to the capsule's root.
const (
	FileName          = "manifest.json"
	SignatureName     = "manifest.json.sig"
	WorkingMemoryPath = "memory/working_memory.md"
	JournalPath       = "memory/timeline_events.jsonl"
	IndexPath         = "memory/vector_index/index.json"
	SnapshotPath      = "artifacts/snapshot.json"
	BlobsDir          = "artifacts/blobs"
	EnvironmentPath   = "environment/spec.json"
)

// LayoutFiles lists, sorted, the files a format-1 manifest MUST list in
// Files: every file of the layout except the manifest itself, the journal
// (covered by the Journal section) and the blobs (covered through the
// snapshot and their names).
var LayoutFiles = []string{SnapshotPath, EnvironmentPath, IndexPath, WorkingMemoryPath}

// Manifest is the decoded manifest.json. The zero value is not valid; build
// one with New or Parse.
type Manifest struct {
	// Format is the manifest format version, read before anything else.
	Format int `json:"format"`
	// Agent is the agent's identity, stable for its whole life.
	Agent Agent `json:"agent"`
	// Holder is the node that holds the agent and its fencing epoch.
	Holder Holder `json:"holder"`
	// Schemas maps each kind of state (schema.Kinds) to its schema version.
	Schemas map[schema.Kind]int `json:"schemas"`
	// Writer is the build that made the last commit.
	Writer Writer `json:"writer"`
	// Journal describes the committed prefix of memory/timeline_events.jsonl.
	Journal Journal `json:"journal"`
	// Files holds a digest and size for every file of LayoutFiles, sorted by path.
	Files []File `json:"files"`
	// Extensions holds members this release does not interpret; a writer
	// MUST carry them over unchanged (FORMAT §2.3).
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// Agent is the identity of an agent.
type Agent struct {
	// ID is a ULID (26 Crockford base32 characters), the one identifier of
	// the agent everywhere.
	ID string `json:"id"`
	// Name is a human label; it may be empty and need not be unique.
	Name string `json:"name"`
	// Created is when the capsule was initialised, RFC 3339 in UTC ("Z").
	Created string `json:"created"`
}

// Holder names the node that holds the agent. Both fields are zero before
// any node holds it.
type Holder struct {
	Node  string `json:"node"`
	Epoch uint64 `json:"epoch"`
}

// Writer names the build that wrote a commit.
type Writer struct {
	Release string `json:"release"`
	Commit  string `json:"commit"`
}

// Journal records the committed journal: the first Bytes bytes of
// memory/timeline_events.jsonl hold Events events and hash to Digest. Bytes
// beyond are an uncommitted tail, checked by its hash chain (FORMAT §3.3).
type Journal struct {
	Events int64           `json:"events"`
	Bytes  int64           `json:"bytes"`
	Digest digest.Digest   `json:"digest"`
	Heads  map[string]Head `json:"heads"`
}

// Head is the last committed event of one machine: what that machine's
// next event must follow (seq+1, prev = ID, a greater clock, no lower epoch).
// It has the fields of journal.Head, which computes it.
type Head struct {
	Seq   uint64 `json:"seq"`
	ID    string `json:"id"`
	Clock uint64 `json:"clock"`
	Epoch uint64 `json:"epoch"`
}

// File is the digest and size of one file of the capsule.
type File struct {
	Path   string        `json:"path"`
	Size   int64         `json:"size"`
	Digest digest.Digest `json:"digest"`
}

// EmptyDigest is the digest of zero bytes, the journal digest of a new capsule.
var EmptyDigest = digest.FromBytes(nil)

// New returns a manifest for a new agent with every schema at this release's
// version (the empty journal at version 1), an empty journal and no files;
// the caller adds the files.
func New(agent Agent, w Writer) *Manifest {
	m := &Manifest{
		Format:  FormatVersion,
		Agent:   agent,
		Schemas: map[schema.Kind]int{},
		Writer:  w,
		Journal: Journal{Digest: EmptyDigest, Heads: map[string]Head{}},
	}
	for _, k := range schema.Kinds {
		m.Schemas[k] = schema.Current[k]
	}
	// The journal's version is the highest v of its committed lines; an
	// empty journal has none and is version 1, which every release reads
	// (FORMAT §11.6).
	m.Schemas[schema.Journal] = 1
	return m
}

// File returns the entry for path and whether it is listed.
func (m *Manifest) File(path string) (File, bool) {
	for _, f := range m.Files {
		if f.Path == path {
			return f, true
		}
	}
	return File{}, false
}

// SetFile adds or replaces the entry for f.Path, keeping Files sorted.
func (m *Manifest) SetFile(f File) {
	for i := range m.Files {
		if m.Files[i].Path == f.Path {
			m.Files[i] = f
			return
		}
	}
	m.Files = append(m.Files, f)
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
}

// Clone returns a deep copy of m.
func (m *Manifest) Clone() *Manifest {
	c := *m
	c.Schemas = make(map[schema.Kind]int, len(m.Schemas))
	for k, v := range m.Schemas {
		c.Schemas[k] = v
	}
	c.Journal.Heads = make(map[string]Head, len(m.Journal.Heads))
	for k, v := range m.Journal.Heads {
		c.Journal.Heads[k] = v
	}
	c.Files = append([]File(nil), m.Files...)
	if m.Extensions != nil {
		c.Extensions = make(map[string]json.RawMessage, len(m.Extensions))
		for k, v := range m.Extensions {
			c.Extensions[k] = append(json.RawMessage(nil), v...)
		}
	}
	return &c
}
