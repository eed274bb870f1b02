package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// The stat cache outlives a restart the way git's index does: a node that
// stops saves it beside the workspace (node: statCacheFile, in the
// agent's folder, never in the capsule), and a node that starts holding the agent
// loads it, so the first record after a restart (a commit, or the first
// pre-copy round of a move) hashes only what changed while the node was
// down instead of the whole workspace. An entry vouches for a file only
// while the file's size, modification time, mode, inode and change time
// are all what they were when it was hashed, and never for a file that
// was racily clean then (StatCache.Lookup); a file replaced or rewritten
// while the node was down is therefore hashed again. The file is cache: a
// missing, torn or foreign one is ignored, and a wrong digest in it could
// not go unnoticed (the capsule's store refuses bytes that do not hash to
// the digest they are stored under, and so does every target).

// statCacheVersion is the version of the saved stat cache's format.
const statCacheVersion = 1

// maxStatCacheFile bounds what LoadFile reads.
const maxStatCacheFile = 256 << 20

type savedStatCache struct {
	V     int              `json:"v"`
	Dir   string           `json:"dir"`
	Files []savedStatEntry `json:"files"`
}

type savedStatEntry struct {
	Path  string        `json:"p"`
	Size  int64         `json:"s"`
	MTime int64         `json:"m"`
	Mode  uint32        `json:"mode"`
	Ino   uint64        `json:"i"`
	CTime int64         `json:"c"`
	Blob  digest.Digest `json:"b"`
	At    int64         `json:"at"` // when it was hashed, UnixNano
}

// SaveFile writes the cache to name, durably (it is read after a
// restart), when it describes the workspace dir. It writes nothing for a
// cache that describes no workspace or another one.
func (c *StatCache) SaveFile(fsys vfs.FS, name, dir string) error {
	c.mu.Lock()
	if c.files == nil || c.dir != dir {
		c.mu.Unlock()
		return nil
	}
	out := savedStatCache{V: statCacheVersion, Dir: c.dir, Files: make([]savedStatEntry, 0, len(c.files))}
	for p, e := range c.files {
		out.Files = append(out.Files, savedStatEntry{Path: p, Size: e.key.size, MTime: e.key.mtime, Mode: uint32(e.key.mode),
			Ino: e.key.ino, CTime: e.key.ctime, Blob: e.blob, At: e.at.UnixNano()})
	}
	c.mu.Unlock()
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if err := vfs.WriteFile(fsys, name, b, 0o600); err != nil {
		return fmt.Errorf("store: save stat cache: %w", err)
	}
	return nil
}

// LoadFile fills an unused cache from the file name, when that describes
// the workspace dir. It returns the entries loaded; a cache in use already
// is left alone (what it knows is newer).
func (c *StatCache) LoadFile(fsys vfs.FS, name, dir string) (int, error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStatCacheFile+1))
	if err != nil {
		return 0, err
	}
	if len(b) > maxStatCacheFile {
		return 0, fmt.Errorf("store: %s: over %d bytes", name, maxStatCacheFile)
	}
	files, err := parseStatCache(b, dir)
	if err != nil {
		return 0, fmt.Errorf("store: %s: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files != nil {
		return 0, nil
	}
	c.dir, c.files, c.stored = dir, files, nil
	return len(files), nil
}

// parseStatCache checks and decodes a saved stat cache of the workspace
// dir.
func parseStatCache(b []byte, dir string) (map[string]cachedFile, error) {
	var s savedStatCache
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	switch {
	case s.V != statCacheVersion:
		return nil, fmt.Errorf("version %d, this release reads %d", s.V, statCacheVersion)
	case s.Dir != dir:
		return nil, fmt.Errorf("describes %s, not %s", s.Dir, dir)
	}
	files := make(map[string]cachedFile, len(s.Files))
	for i, e := range s.Files {
		if err := manifest.ValidPath(e.Path); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if _, err := digest.Parse(string(e.Blob)); err != nil || e.Size < 0 {
			return nil, fmt.Errorf("entry %d (%s): bad digest or size", i, e.Path)
		}
		files[e.Path] = cachedFile{
			key:  StatKey{size: e.Size, mtime: e.MTime, mode: fs.FileMode(e.Mode), ino: e.Ino, ctime: e.CTime},
			blob: e.Blob,
			at:   time.Unix(0, e.At),
		}
	}
	return files, nil
}
