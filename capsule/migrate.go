package capsule

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// OriginalsExtension is the manifest extension that lists the original
// bytes a migration kept (FORMAT §11.5).
const OriginalsExtension = "dev.agentcapsule.originals"

// Original is one file as a release wrote it before a migration replaced
// it, kept as a blob so that `capsule migrate --to` can restore it.
type Original struct {
	Kind    schema.Kind   `json:"kind"`
	Version int           `json:"version"`
	Path    string        `json:"path"`
	Writer  string        `json:"writer"`
	Digest  digest.Digest `json:"digest"`
	Size    int64         `json:"size"`
	// Migrated is the digest of the file the migration wrote in its place,
	// so a rollback knows whether the file changed since; "" for the
	// manifest, whose own digest it cannot hold.
	Migrated digest.Digest `json:"migrated,omitempty"`
}

// Originals returns the originals m lists, in the manifest's order.
func Originals(m *manifest.Manifest) ([]Original, error) {
	raw, ok := m.Extensions[OriginalsExtension]
	if !ok {
		return nil, nil
	}
	var out []Original
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("capsule: manifest extension %s: %w", OriginalsExtension, err)
	}
	for _, o := range out {
		if _, err := digest.Parse(string(o.Digest)); err != nil || o.Size < 0 || o.Path == "" {
			return nil, fmt.Errorf("capsule: manifest extension %s: bad entry for %s", OriginalsExtension, o.Path)
		}
	}
	return out, nil
}

func setOriginals(m *manifest.Manifest, list []Original) error {
	if len(list) == 0 {
		delete(m.Extensions, OriginalsExtension)
		return nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return fmt.Errorf("capsule: originals: %w", err)
	}
	if m.Extensions == nil {
		m.Extensions = map[string]json.RawMessage{}
	}
	m.Extensions[OriginalsExtension] = b
	return nil
}

// ErrRefused marks a capsule that this release will not read: a kind's
// version is newer than it reads, below its floor, or without a chain of
// steps (FORMAT §11.4). Nothing was written.
var ErrRefused = errors.New("capsule: refused")

// ErrUnknownRelease marks a release this build knows nothing of.
var ErrUnknownRelease = errors.New("capsule: unknown release")

// RefusedError names the kind, the version found, the release that wrote
// it and the release that can read it.
type RefusedError struct {
	Kind   schema.Kind
	Got    int
	Writer string // "" when the manifest names none
	Floor  int
	Max    int
}

// Error says what was found and which release reads it.
func (e *RefusedError) Error() string {
	by := "an unknown release"
	if e.Writer != "" {
		by = e.Writer
	}
	head := fmt.Sprintf("%s schema version %d (written by %s)", e.Kind, e.Got, by)
	switch {
	case e.Got > e.Max:
		reader := "a release newer than " + schema.Release
		if e.Writer != "" && compareRelease(e.Writer, schema.Release) > 0 {
			reader = "release " + e.Writer + " or later"
		}
		return fmt.Sprintf("%s is newer than release %s reads (%d to %d): read it with %s; nothing was written", head, schema.Release, e.Floor, e.Max, reader)
	case e.Got < 1:
		return fmt.Sprintf("%s is not a version: no release reads it; nothing was written", head)
	default:
		return fmt.Sprintf("%s is below the floor of release %s (it reads %d to %d): read it with %s, or migrate it with that release first; nothing was written",
			head, schema.Release, e.Floor, e.Max, sinceRelease(e.Kind, e.Got))
	}
}

// Unwrap makes errors.Is(err, ErrRefused) and errors.Is(err,
// manifest.ErrUnsupported) hold.
func (e *RefusedError) Unwrap() []error { return []error{ErrRefused, manifest.ErrUnsupported} }

func sinceRelease(k schema.Kind, v int) string {
	if h, ok := schema.Lookup(k); ok && v <= len(h.Versions) && h.Versions[v-1].Since != "" {
		return "release " + h.Versions[v-1].Since
	}
	return "an earlier release"
}

// KindPlan is how this release reads one kind of a capsule.
type KindPlan struct {
	Kind schema.Kind `json:"kind"`
	// Path is the file of the kind a migration rewrites; "" when no file
	// changes (the journal's lines are never rewritten, FORMAT §11.6).
	Path        string   `json:"path,omitempty"`
	From        int      `json:"from"`
	To          int      `json:"to"`
	Steps       []string `json:"steps,omitempty"`
	Destructive bool     `json:"destructive,omitempty"`
}

// kindFiles are the layout files whose bytes a kind's steps rewrite.
var kindFiles = map[schema.Kind]string{
	schema.Environment: manifest.EnvironmentPath,
	schema.MemoryIndex: manifest.IndexPath,
	schema.Snapshot:    manifest.SnapshotPath,
	schema.Session:     manifest.WorkingMemoryPath,
}

// Refusal returns a *RefusedError (joined, one per kind) when this release
// cannot read every kind m lists, else nil. A kind the manifest does not
// list is version 1 written by 0.1.0 (FORMAT §11.1).
func Refusal(m *manifest.Manifest) error {
	var errs []error
	for _, e := range refusals(m) {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

func refusals(m *manifest.Manifest) []*RefusedError {
	var out []*RefusedError
	writer := m.Writer.Release
	if m.Format < 1 || m.Format > manifest.FormatVersion {
		h, _ := schema.Lookup(schema.Manifest)
		out = append(out, &RefusedError{Kind: schema.Manifest, Got: m.Format, Writer: writer, Floor: h.Floor, Max: h.Current})
	}
	for _, k := range schema.Kinds {
		v := schemaVersion(m, k)
		if _, err := schema.PlanRead(k, v, writer); err != nil {
			h, _ := schema.Lookup(k)
			out = append(out, &RefusedError{Kind: k, Got: v, Writer: writer, Floor: h.Floor, Max: h.Current})
		}
	}
	return out
}

func schemaVersion(m *manifest.Manifest, k schema.Kind) int {
	if v, ok := m.Schemas[k]; ok {
		return v
	}
	return 1
}

// PlanUp returns, for every kind of m older than this release writes, how
// it migrates, or the refusal. The journal is never listed: its lines keep
// their version, and the manifest records the highest of them.
func PlanUp(m *manifest.Manifest) ([]KindPlan, error) {
	if err := Refusal(m); err != nil {
		return nil, err
	}
	var out []KindPlan
	for _, k := range schema.Kinds {
		v := schemaVersion(m, k)
		p, err := schema.PlanRead(k, v, m.Writer.Release)
		if err != nil {
			return nil, fmt.Errorf("capsule: plan %s: %w", k, err)
		}
		if p.Action != schema.Migrate || k == schema.Journal {
			continue // journal lines keep their version; a reader reads them through its steps (FORMAT §11.6)
		}
		kp := KindPlan{Kind: k, Path: kindFiles[k], From: v, To: schema.Current[k], Destructive: p.Destructive}
		for _, s := range p.Steps {
			kp.Steps = append(kp.Steps, s.Summary)
		}
		out = append(out, kp)
	}
	return out, nil
}

// CheckReadable reads the manifest of the capsule in dir (the committed
// state, without recovering anything) and returns the refusal if this
// release cannot read it. It writes nothing; read-only commands call it
// before they read anything else.
func CheckReadable(fsys vfs.FS, dir string) error {
	v := newView(fsys, dir)
	m, _, err := readManifest(fsys, v.manifestPath())
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	if err := Refusal(m); err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	return nil
}

// releaseVersions returns the version of each capsule kind that release r
// writes, from the registry: the newest version whose Since is r or an
// earlier release. It fails for a release this build does not know.
func releaseVersions(r string) (map[schema.Kind]int, error) {
	if r == "" || r == schema.Release {
		return schema.Current, nil
	}
	known := false
	out := map[schema.Kind]int{}
	for _, k := range schema.Kinds {
		h, _ := schema.Lookup(k)
		for _, v := range h.Versions {
			if v.Since == "" {
				continue
			}
			if v.Since == r {
				known = true
			}
			if compareRelease(v.Since, r) <= 0 {
				out[k] = v.N
			}
		}
		if out[k] == 0 {
			return nil, fmt.Errorf("capsule: release %s writes no version of %s that this release knows", r, k)
		}
	}
	if !known {
		return nil, fmt.Errorf("%w %q (this build knows the releases of docs/RELEASES.md up to %s)", ErrUnknownRelease, r, schema.Release)
	}
	return out, nil
}

// compareRelease orders two release strings a.b.c numerically.
func compareRelease(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		x, y := 0, 0
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// originalBlobs returns the digests of the originals m lists.
func originalBlobs(m *manifest.Manifest) map[digest.Digest]int64 {
	list, _ := Originals(m)
	out := make(map[digest.Digest]int64, len(list))
	for _, o := range list {
		out[o.Digest] = o.Size
	}
	return out
}
