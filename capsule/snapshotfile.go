package capsule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
)

// SnapshotVersion is the workspace snapshot schema version this release writes.
var SnapshotVersion = schema.Current[schema.Snapshot]

// ErrBadSnapshot marks a snapshot.json that is not well formed.
var ErrBadSnapshot = errors.New("capsule: invalid snapshot")

// EntryType is what a snapshot entry records.
type EntryType string

// The entry types (FORMAT §5.1).
const (
	TypeFile    EntryType = "file"    // a regular file, its bytes in a blob
	TypeDir     EntryType = "dir"     // a directory with no recorded entry below it
	TypeSymlink EntryType = "symlink" // a relative symbolic link that stays inside the tree
)

// Snapshot is artifacts/snapshot.json: a workspace tree as path to content.
type Snapshot struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Entry is one path of a snapshot. Parent directories of a recorded entry
// are implied; a dir entry records a directory with nothing recorded below.
type Entry struct {
	Path   string        `json:"path"`
	Type   EntryType     `json:"type"`
	Exec   bool          `json:"exec,omitempty"`
	Size   int64         `json:"size,omitempty"`
	Blob   digest.Digest `json:"blob,omitempty"`
	Target string        `json:"target,omitempty"`
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot { return &Snapshot{Version: SnapshotVersion, Entries: []Entry{}} }

// ParseSnapshot decodes and validates snapshot.json strictly: unknown
// members, a newer version and every violation of FORMAT §5.1 are refused,
// all problems named.
func ParseSnapshot(b []byte) (*Snapshot, error) {
	if int64(len(b)) > MaxSnapshotSize {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrBadSnapshot, len(b), MaxSnapshotSize)
	}
	s, ok := decodeSnapshotFast(b)
	if !ok {
		s = &Snapshot{}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(s); err != nil {
			return nil, fmt.Errorf("%w: %s", ErrBadSnapshot, jsonErrorAt(b, err))
		}
		if dec.More() {
			return nil, fmt.Errorf("%w: extra data after the JSON object", ErrBadSnapshot)
		}
	}
	if s.Entries == nil {
		return nil, fmt.Errorf("%w: entries is missing or null (an empty snapshot has \"entries\": [])", ErrBadSnapshot)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// jsonErrorAt adds the line and column to an encoding/json error.
func jsonErrorAt(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := -1
	switch {
	case errors.As(err, &se):
		off = max(int(se.Offset)-1, 0) // Offset is just past the bad byte
	case errors.As(err, &te):
		off = int(te.Offset)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if off < 0 {
		return msg
	}
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(b[:off], '\n')
	return fmt.Sprintf("%d:%d: %s", line, col, msg)
}

// Validate checks s against FORMAT §5.1 and names every problem: version,
// sorted unique valid paths, per-type fields, no entry below a file or a
// link, and link targets that stay inside the tree.
func (s *Snapshot) Validate() error {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if !schema.CanRead(schema.Snapshot, s.Version) {
		add("version %d is not one this release reads (1 to %d)", s.Version, SnapshotVersion)
	}

	leaves := map[string]EntryType{} // files and links: nothing may lie below them
	links := map[string]string{}
	for i, e := range s.Entries {
		if i > 0 && s.Entries[i-1].Path >= e.Path {
			add("entries[%d]: %q is out of order or repeated (entries are sorted by path)", i, clip(e.Path))
		}
		if err := manifest.ValidPath(e.Path); err != nil {
			add("entries[%d]: %v", i, err)
			continue
		}
		e.check(i, add)
		if e.Type == TypeFile || e.Type == TypeSymlink {
			leaves[e.Path] = e.Type
		}
		if e.Type == TypeSymlink {
			links[e.Path] = e.Target
		}
	}
	for i, e := range s.Entries {
		if manifest.ValidPath(e.Path) != nil {
			continue // reported above; path.Dir of an absolute path never reaches "."
		}
		for p := path.Dir(e.Path); p != "."; p = path.Dir(p) {
			if t, ok := leaves[p]; ok {
				add("entries[%d]: %q lies below the %s %q", i, clip(e.Path), t, clip(p))
				break
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(links)) {
		if escapes(links, p) {
			add("symlink %q: target leaves the tree", clip(p))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadSnapshot, strings.Join(probs, "; "))
	}
	return nil
}

func (e Entry) check(i int, add func(string, ...any)) {
	switch e.Type {
	case TypeFile:
		if err := e.Blob.Validate(); err != nil {
			add("entries[%d] %q: blob %q is not a sha256 digest", i, clip(e.Path), clip(string(e.Blob)))
		}
		if e.Size < 0 || e.Target != "" {
			add("entries[%d] %q: a file has a size >= 0 and no target", i, clip(e.Path))
		}
	case TypeDir:
		if e.Exec || e.Size != 0 || e.Blob != "" || e.Target != "" {
			add("entries[%d] %q: a dir has only a path and a type", i, clip(e.Path))
		}
	case TypeSymlink:
		if e.Exec || e.Size != 0 || e.Blob != "" {
			add("entries[%d] %q: a symlink has only a path, a type and a target", i, clip(e.Path))
		}
		if e.Target == "" || strings.HasPrefix(e.Target, "/") || strings.ContainsRune(e.Target, 0) || len(e.Target) > 4096 {
			add("entries[%d] %q: a symlink target is a non-empty relative path", i, clip(e.Path))
		}
	default:
		add("entries[%d] %q: unknown type %q (file, dir or symlink)", i, clip(e.Path), clip(string(e.Type)))
	}
}

// maxLinkHops bounds link resolution, as the kernel's ELOOP limit does.
const maxLinkHops = 40

// escapes reports whether the link at p, resolved against the tree's own
// links, reaches outside the tree (or loops). Resolution is by component,
// so "a/.." through a link to a directory goes where the kernel would go.
func escapes(links map[string]string, p string) bool {
	stack := splitPath(path.Dir(p))
	queue := splitPath(links[p])
	for hops := 0; len(queue) > 0; {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
		case "..":
			if len(stack) == 0 {
				return true
			}
			stack = stack[:len(stack)-1]
		default:
			stack = append(stack, c)
			t, ok := links[strings.Join(stack, "/")]
			if !ok {
				continue
			}
			if hops++; hops > maxLinkHops || strings.HasPrefix(t, "/") {
				return true
			}
			stack = stack[:len(stack)-1]
			queue = append(splitPath(t), queue...)
		}
	}
	return false
}

func splitPath(p string) []string {
	if p == "." || p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// Marshal returns s as snapshot.json: one entry per line, sorted by path,
// a final newline. It refuses a snapshot that Validate rejects.
func (s *Snapshot) Marshal() ([]byte, error) {
	c := *s
	c.Entries = append([]Entry{}, s.Entries...)
	sort.Slice(c.Entries, func(i, j int) bool { return c.Entries[i].Path < c.Entries[j].Path })
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 64+len(c.Entries)*160)
	b = fmt.Appendf(b, "{\"version\": %d, \"entries\": [", c.Version)
	for i, e := range c.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  "...)
		b = appendEntry(b, e)
	}
	if len(c.Entries) > 0 {
		b = append(b, '\n')
	}
	return append(b, "]}\n"...), nil
}

// Blobs returns each blob the snapshot references with its size.
func (s *Snapshot) Blobs() map[digest.Digest]int64 {
	out := map[digest.Digest]int64{}
	for _, e := range s.Entries {
		if e.Type == TypeFile {
			out[e.Blob] = e.Size
		}
	}
	return out
}

// Stats counts the snapshot's files, directories and links, and the bytes
// of its files.
func (s *Snapshot) Stats() SnapshotStats {
	var st SnapshotStats
	for _, e := range s.Entries {
		st.add(e)
	}
	return st
}

// SnapshotStats summarises a snapshot.
type SnapshotStats struct {
	Files    int   `json:"files"`
	Dirs     int   `json:"dirs"`
	Symlinks int   `json:"symlinks"`
	Bytes    int64 `json:"bytes"`
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
