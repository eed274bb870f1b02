package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// Stored is what a capsule folder holds for its index: the corpus (its
// journal and working memory), the bytes of index.json as stored, and the
// index they decode to at version 2, nil when they do not (Problem says
// why: a stale, truncated, tampered or version-1 index).
type Stored struct {
	Corpus  *Corpus
	Bytes   []byte
	Version int // the manifest's memory_index version
	Index   *Index
	Problem string
}

// Load reads a capsule folder's journal, working memory and index without
// changing anything. The index is read through the schema steps from the
// version the manifest names (FORMAT §11.4) and is never trusted: a file
// that does not decode is reported in Problem, not as an error.
func Load(fsys vfs.FS, dir string) (*Stored, error) {
	mb, err := vfs.ReadFile(fsys, filepath.Join(dir, manifest.FileName))
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	m, err := manifest.Parse(mb)
	if err != nil {
		return nil, fmt.Errorf("memory: %s: %w", dir, err)
	}
	wm, err := vfs.ReadFile(fsys, layoutPath(dir, manifest.WorkingMemoryPath))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("memory: %w", err)
	}
	corpus, err := readJournal(fsys, dir, wm)
	if err != nil {
		return nil, err
	}
	s := &Stored{Corpus: corpus, Version: m.Schemas[schema.MemoryIndex]}
	s.Bytes, err = vfs.ReadFile(fsys, layoutPath(dir, manifest.IndexPath))
	if err != nil {
		s.Problem = fmt.Sprintf("no index: %v", err)
		return s, nil
	}
	s.Index, s.Problem = decodeStored(s.Bytes, s.Version)
	return s, nil
}

func readJournal(fsys vfs.FS, dir string, wm []byte) (*Corpus, error) {
	f, err := fsys.Open(layoutPath(dir, manifest.JournalPath))
	if errors.Is(err, fs.ErrNotExist) {
		return NewCorpus(nil, wm), nil
	}
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	defer f.Close()
	return ReadCorpus(f, wm)
}

// decodeStored decodes index bytes written at version v.
func decodeStored(b []byte, v int) (*Index, string) {
	if v != Version {
		up, err := schema.Up(schema.MemoryIndex, v, Version, b)
		if err != nil {
			return nil, fmt.Sprintf("version %d index does not migrate: %v", v, err)
		}
		b = up
	}
	x, err := decode(b)
	switch {
	case err != nil:
		return nil, err.Error()
	case x == nil && v != Version:
		return nil, fmt.Sprintf("a version-%d placeholder (stale)", v)
	case x == nil:
		return nil, "a stale index (no embedder)"
	}
	return x, ""
}

func layoutPath(dir, rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }

// Open loads a capsule folder's index and brings it up to date with e
// (Refresh): the index it returns reflects the folder's journal and
// working memory and was built by e, whatever the file held. It writes
// nothing; Save stores the result.
func Open(ctx context.Context, fsys vfs.FS, dir string, e Embedder) (*Index, *Report, *Stored, error) {
	s, err := Load(fsys, dir)
	if err != nil {
		return nil, nil, nil, err
	}
	x, rep, err := Refresh(ctx, s.Index, s.Corpus, e)
	if rep != nil && rep.Mode == ModeFull && s.Problem != "" {
		rep.Reason = s.Problem
	}
	return x, rep, s, err
}

// Save commits x as the folder's memory/vector_index/index.json through a
// capsule commit (FORMAT §3.1, §4.2: the manifest digests the file), unless
// the folder already holds exactly these bytes. A capsule whose manifest
// names an older memory index version is migrated first (capsule.Migrate,
// which keeps the originals of FORMAT §11.5). It reports whether it wrote.
func Save(fsys vfs.FS, dir string, cfg capsule.Config, x *Index, stored *Stored) (bool, error) {
	b, err := x.Encode()
	if err != nil {
		return false, err
	}
	if stored != nil && stored.Version == Version && bytes.Equal(stored.Bytes, b) {
		return false, nil
	}
	if stored == nil || stored.Version != Version {
		if _, err := capsule.Migrate(fsys, dir, cfg, capsule.MigrateOptions{}); err != nil {
			return false, fmt.Errorf("memory: save: %w", err)
		}
	}
	c, err := capsule.Open(fsys, dir, cfg)
	if err != nil {
		return false, fmt.Errorf("memory: save: %w", err)
	}
	err = c.Commit(func(tx *capsule.Tx) error {
		if v := tx.Manifest().Schemas[schema.MemoryIndex]; v != Version {
			return fmt.Errorf("memory: save: the manifest names memory index version %d, this release writes %d", v, Version)
		}
		return tx.SetFile(manifest.IndexPath, bytes.NewReader(b))
	})
	if err != nil {
		return false, fmt.Errorf("memory: save: %w", err)
	}
	return true, nil
}
