package capsule

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/oklog/ulid/v2"
)

// InitConfig says how to create a capsule.
type InitConfig struct {
	Config
	// Name is a human label for the agent; it may be empty.
	Name string
	// ID is the agent ID to use, a ULID; empty means a new one.
	ID string
	// Entropy feeds a new ID; nil means crypto/rand.
	Entropy io.Reader
	// Holder is the initial holder record; zero means no node holds it yet.
	Holder manifest.Holder
}

// EmptyIndex is the content of memory/vector_index/index.json in a new
// capsule: a stale version-2 memory index, which reflects nothing yet
// (FORMAT §11.7.2), the same bytes the up step makes of 0.1.0's placeholder.
const EmptyIndex = schema.StaleIndex

// Init creates a valid, empty capsule in dir and opens it (FORMAT §1).
// dir must not exist or be empty. The capsule is built in a staging
// directory beside dir and renamed into place, so a crash leaves either no
// capsule or a complete one (and perhaps a staging directory to delete).
func Init(fsys vfs.FS, dir string, cfg InitConfig) (*Capsule, error) {
	dir = filepath.Clean(dir)
	if err := checkEmptyTarget(fsys, dir); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	m, err := newManifest(cfg)
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := vfs.MkdirAllDurable(fsys, filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	staging, err := stagingName(dir, "init")
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := build(fsys, staging, m); err != nil {
		_ = fsys.RemoveAll(staging)
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := moveInto(fsys, staging, dir); err != nil {
		_ = fsys.RemoveAll(staging)
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	return Open(fsys, dir, cfg.Config)
}

// checkEmptyTarget accepts a missing dir or an empty directory.
func checkEmptyTarget(fsys vfs.FS, dir string) error {
	fi, err := fsys.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrExists, dir)
	}
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%w: %s holds %d entries", ErrExists, dir, len(ents))
	}
	return nil
}

// stagingName returns a fresh hidden name beside dir.
func stagingName(dir, what string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".capsule-"+what+"-"+hex.EncodeToString(b[:])), nil
}

// moveInto renames the complete directory src to dst (missing or empty)
// and makes the rename durable.
func moveInto(fsys vfs.FS, src, dst string) error {
	if err := fsys.Rename(src, dst); err != nil {
		return err
	}
	if err := fsys.SyncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	if filepath.Dir(src) != filepath.Dir(dst) {
		return fsys.SyncDir(filepath.Dir(src))
	}
	return nil
}

func newManifest(cfg InitConfig) (*manifest.Manifest, error) {
	now := cfg.now().UTC()
	id := cfg.ID
	if id == "" {
		entropy := cfg.Entropy
		if entropy == nil {
			entropy = rand.Reader
		}
		u, err := ulid.New(ulid.Timestamp(now), entropy)
		if err != nil {
			return nil, fmt.Errorf("new agent ID: %w", err)
		}
		id = u.String()
	}
	if !manifest.IsULID(id) {
		return nil, fmt.Errorf("agent ID %q is not a ULID", id)
	}
	m := manifest.New(manifest.Agent{ID: id, Name: cfg.Name, Created: now.Format(time.RFC3339)}, cfg.writer())
	m.Holder = cfg.Holder
	return m, nil
}

// build writes a complete new capsule into dir: the layout directories, the
// initial files, an empty journal, and the manifest last.
func build(fsys vfs.FS, dir string, m *manifest.Manifest) error {
	if err := vfs.MkdirAllDurable(fsys, dir, 0o755); err != nil {
		return err
	}
	for _, d := range layoutDirs {
		if err := vfs.MkdirAllDurable(fsys, hostPath(dir, d), 0o755); err != nil {
			return err
		}
	}
	env, err := envspec.Default().Marshal()
	if err != nil {
		return err
	}
	snap, err := NewSnapshot().Marshal()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		manifest.SnapshotPath:      snap,
		manifest.EnvironmentPath:   env,
		manifest.IndexPath:         []byte(EmptyIndex),
		manifest.WorkingMemoryPath: nil,
	}
	for _, rel := range manifest.LayoutFiles {
		if err := vfs.WriteFile(fsys, hostPath(dir, rel), files[rel], filePerm); err != nil {
			return err
		}
		m.SetFile(manifest.File{Path: rel, Size: int64(len(files[rel])), Digest: digest.FromBytes(files[rel])})
	}
	if err := vfs.WriteFile(fsys, hostPath(dir, manifest.JournalPath), nil, filePerm); err != nil {
		return err
	}
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	return vfs.WriteFile(fsys, hostPath(dir, manifest.FileName), data, filePerm)
}
