package node

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/vfs"
)

// This file is the node's whole use of package capsule: create a capsule,
// commit the workspace and journal into it, check it out, verify it.

func (n *Node) capsuleConfig() capsule.Config {
	return capsule.Config{Writer: n.writer(), Now: n.clock.Now}
}

// initCapsule creates an empty capsule for agent id in dir.
func initCapsule(fsys vfs.FS, dir, id, name string, cfg capsule.Config) error {
	_, err := capsule.Init(fsys, dir, capsule.InitConfig{Config: cfg, ID: id, Name: name})
	return err
}

// commitCapsule commits snap (whose blobs are already in the store) with
// holder and the journal summary sum (whose bytes are already durable in
// the journal file).
func commitCapsule(c *capsule.Capsule, snap *capsule.Snapshot, holder manifest.Holder, sum journal.Summary) error {
	return c.Commit(func(tx *capsule.Tx) error {
		if err := tx.SetSnapshot(snap); err != nil {
			return err
		}
		tx.SetHolder(holder)
		return tx.SetJournal(manifestJournal(sum))
	})
}

// commitHolder commits only the holder and the journal summary.
func commitHolder(fsys vfs.FS, capDir string, holder manifest.Holder, sum journal.Summary, w manifest.Writer) error {
	c, err := capsule.Open(fsys, capDir, capsule.Config{Writer: w})
	if err != nil {
		return err
	}
	return c.Commit(func(tx *capsule.Tx) error {
		tx.SetHolder(holder)
		return tx.SetJournal(manifestJournal(sum))
	})
}

func manifestJournal(s journal.Summary) manifest.Journal {
	j := manifest.Journal{Events: s.Events, Bytes: s.Bytes, Digest: s.Digest, Heads: map[string]manifest.Head{}}
	for m, h := range s.Heads {
		j.Heads[m] = manifest.Head{Seq: h.Seq, ID: h.ID, Clock: h.Clock, Epoch: h.Epoch}
	}
	return j
}

// walk visits every entry below dir (rel is slash-separated), sorted,
// skipping temporary files of atomic writes.
func walk(fsys vfs.FS, dir, rel string, visit func(rel string, fi fs.FileInfo) error) error {
	ents, err := fsys.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) && rel == "" {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), vfs.TempPrefix) {
			continue
		}
		r := path.Join(rel, e.Name())
		fi, err := fsys.Lstat(filepath.Join(dir, filepath.FromSlash(r)))
		if err != nil {
			return err
		}
		if err := visit(r, fi); err != nil {
			return err
		}
		if fi.IsDir() {
			if err := walk(fsys, dir, r, visit); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyTree copies the workspace folder src (on the host) into dst, for
// `capsule agent create --from`.
func copyTree(src vfs.FS, from string, dst vfs.FS, to string) error {
	return walk(src, from, "", func(rel string, fi fs.FileInfo) error {
		out := filepath.Join(to, filepath.FromSlash(rel))
		in := filepath.Join(from, filepath.FromSlash(rel))
		switch {
		case fi.IsDir():
			return vfs.MkdirAllDurable(dst, out, 0o755)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := src.Readlink(in)
			if err != nil {
				return err
			}
			return dst.Symlink(target, out)
		case fi.Mode().IsRegular():
			f, err := src.Open(in)
			if err != nil {
				return err
			}
			defer f.Close()
			return vfs.WriteFileFrom(dst, out, f, fi.Mode().Perm())
		}
		return nil
	})
}

// verifyCapsule checks the capsule folder offline with capsule.Verify
// (every digest, every blob, the snapshot's references, unexpected files)
// and the journal's uncommitted tail by hash chain, and returns every
// problem found.
func verifyCapsule(fsys vfs.FS, dir string) []string {
	rep, err := capsule.Verify(fsys, dir, capsule.VerifyOptions{JournalTail: journalTail, Workers: 2})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range rep.Problems {
		out = append(out, p.String())
	}
	return out
}

// journalTail checks the journal bytes after the committed prefix by chain.
func journalTail(tail io.Reader, committed manifest.Journal) []capsule.Problem {
	probs, err := journal.VerifyTail(agentlog.FromManifest(committed), tail)
	if err != nil {
		return []capsule.Problem{{Path: manifest.JournalPath, Kind: capsule.KindJournal, Detail: err.Error()}}
	}
	var out []capsule.Problem
	for _, p := range probs {
		out = append(out, capsule.Problem{Path: manifest.JournalPath, Kind: capsule.KindJournal, Detail: p.String()})
	}
	return out
}

func readManifestFile(fsys vfs.FS, capDir string) (*manifest.Manifest, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(capDir, manifest.FileName))
	if err != nil {
		return nil, err
	}
	return manifest.Parse(b)
}
