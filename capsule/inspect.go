package capsule

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/internal/dirlist"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// Info describes a capsule without verifying it (Inspect).
type Info struct {
	Format  int                 `json:"format"`
	Agent   manifest.Agent      `json:"agent"`
	Holder  manifest.Holder     `json:"holder"`
	Schemas map[schema.Kind]int `json:"schemas"`
	Writer  manifest.Writer     `json:"writer"`
	Journal JournalInfo         `json:"journal"`
	// Files lists the manifest's files with their recorded sizes.
	Files []manifest.File `json:"files"`
	// Snapshot summarises snapshot.json; nil if it cannot be read.
	Snapshot *SnapshotStats `json:"snapshot"`
	// Blobs counts the blob files present and their bytes.
	Blobs BlobsInfo `json:"blobs"`
	// Environment summarises spec.json; nil if it cannot be read.
	Environment *EnvironmentInfo `json:"environment"`
	// TotalBytes is the size of every file in the folder.
	TotalBytes int64 `json:"total_bytes"`
	// Signed reports whether manifest.json.sig is present (not whether it verifies).
	Signed bool `json:"signed"`
	// Pending reports an interrupted commit that the next open completes.
	Pending bool `json:"pending"`
}

// JournalInfo summarises the journal.
type JournalInfo struct {
	Events         int64 `json:"events"`
	CommittedBytes int64 `json:"committed_bytes"`
	FileBytes      int64 `json:"file_bytes"`
	Machines       int   `json:"machines"`
}

// BlobsInfo counts blobs.
type BlobsInfo struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// EnvironmentInfo summarises the environment spec; secrets are names.
type EnvironmentInfo struct {
	// Version is the version spec.json holds; an older one is described
	// as this release reads it, migrated in memory.
	Version int      `json:"version"`
	Vars    int      `json:"vars"`
	Secrets []string `json:"secrets"`
	// Tools names the MCP servers (version 1's tools).
	Tools []string `json:"tools"`
	// Network is the network the file states.
	Network string `json:"network"`
	// Effective is the network this release grants: a version-1 spec's
	// network is narrowed to none by its migration (FORMAT §11.7.1).
	Effective string `json:"effective_network"`
	// Sandbox is the sandbox mode, required or none.
	Sandbox string `json:"sandbox"`
}

// Inspect describes the capsule in dir: identity, holder, schema versions,
// writer, journal, sizes, file and blob counts, environment summary. It
// reads only and hashes nothing; use Verify to check the bytes. It fails
// only if the manifest cannot be read or parsed.
func Inspect(fsys vfs.FS, dir string) (*Info, error) {
	v := newView(fsys, dir)
	m, _, err := readManifest(fsys, v.manifestPath())
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", dir, err)
	}
	if err := Refusal(m); err != nil {
		return nil, fmt.Errorf("inspect %s: %w", dir, err)
	}
	info := &Info{Format: m.Format, Agent: m.Agent, Holder: m.Holder, Schemas: m.Schemas, Writer: m.Writer,
		Files: m.Files, Pending: v.pending}
	info.Journal = JournalInfo{Events: m.Journal.Events, CommittedBytes: m.Journal.Bytes, Machines: len(m.Journal.Heads)}
	if fi, err := fsys.Stat(v.file(manifest.JournalPath)); err == nil {
		info.Journal.FileBytes = fi.Size()
	}
	if _, err := fsys.Lstat(hostPath(dir, manifest.SignatureName)); err == nil {
		info.Signed = true
	}
	if info.Blobs, err = countBlobs(fsys, hostPath(dir, manifest.BlobsDir)); err != nil {
		return nil, fmt.Errorf("inspect %s: %w", dir, err)
	}
	info.Snapshot = inspectSnapshot(fsys, v)
	info.Environment = inspectEnvironment(fsys, v)
	info.TotalBytes, err = treeSize(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", dir, err)
	}
	return info, nil
}

// countBlobs counts the blob files of the folder blobs and their bytes, as
// BlobStore.List lists them, a batch of the folder at a time.
func countBlobs(fsys vfs.FS, blobs string) (BlobsInfo, error) {
	var info BlobsInfo
	err := dirlist.Each(fsys, blobs, func(e fs.DirEntry) error {
		if !e.Type().IsRegular() || !digest.IsHex(e.Name()) {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		info.Count++
		info.Bytes += fi.Size()
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return info, err
}

// inspectSnapshot summarises the view's snapshot.json, entry by entry.
func inspectSnapshot(fsys vfs.FS, v *view) *SnapshotStats {
	var st SnapshotStats
	f, err := fsys.Open(v.file(manifest.SnapshotPath))
	if err != nil {
		return nil
	}
	defer f.Close()
	_, err = streamSnapshot(io.LimitReader(f, MaxSnapshotSize), func(e Entry) error { st.add(e); return nil })
	if errors.Is(err, errShape) {
		return parseSnapshotStats(fsys, v)
	}
	if err != nil {
		return nil
	}
	return &st
}

func parseSnapshotStats(fsys vfs.FS, v *view) *SnapshotStats {
	b, err := readLimited(fsys, v.file(manifest.SnapshotPath), MaxSnapshotSize)
	if err != nil {
		return nil
	}
	s, err := ParseSnapshot(b)
	if err != nil {
		return nil
	}
	st := s.Stats()
	return &st
}

func inspectEnvironment(fsys vfs.FS, v *view) *EnvironmentInfo {
	b, err := readLimited(fsys, v.file(manifest.EnvironmentPath), envspec.MaxSize)
	if err != nil {
		return nil
	}
	s, err := envspec.Parse(b) // an older version is migrated in memory
	if err != nil {
		return nil
	}
	version, _ := envspec.ReadVersion(b)
	e := &EnvironmentInfo{Version: version, Vars: len(s.Env), Secrets: append([]string{}, s.Secrets...), Tools: []string{},
		Network: string(s.Sandbox.Network), Sandbox: s.Sandbox.Mode}
	if s.Migrated != nil && s.Migrated.Network != "" && version < envspec.Version {
		e.Network = s.Migrated.Network // what the file says; Effective is how this release reads it
	}
	e.Effective = string(s.Sandbox.Network)
	for _, t := range s.Tools {
		e.Tools = append(e.Tools, t.Name)
	}
	sort.Strings(e.Secrets)
	return e
}

// treeSize adds up the sizes of the regular files below dir.
func treeSize(fsys vfs.FS, dir string) (int64, error) {
	var total int64
	err := dirlist.Each(fsys, dir, func(e fs.DirEntry) error {
		switch {
		case e.IsDir():
			n, err := treeSize(fsys, filepath.Join(dir, e.Name()))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			total += n
		case e.Type().IsRegular():
			if fi, err := e.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}
