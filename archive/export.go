package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// modTime is the modification time of every entry: the Unix epoch (FORMAT §8.2).
var modTime = time.Unix(0, 0).UTC()

// Fixed permission bits of every entry (FORMAT §8.2).
const (
	FileMode = 0o644
	DirMode  = 0o755
)

// MaxManifestSize bounds the manifest.json export reads into memory to sign.
const MaxManifestSize = 16 << 20

// copyBufSize is the buffer every copy uses: large reads and writes keep
// export and import near the speed of the disk.
const copyBufSize = 1 << 20

// ExportConfig controls Export. The zero value writes an unsigned,
// uncompressed tar.
type ExportConfig struct {
	// Compression of the output stream.
	Compression Compression
	// OnManifest, if set, is called with the exact manifest.json bytes the
	// archive will hold before anything is written; an error aborts the
	// export. The command parses them there to drive Check.
	OnManifest func(manifest []byte) error
	// Sign, if set, is called with the exact manifest.json bytes written to
	// the archive and returns the armored signature stored next to it as
	// manifest.json.sig (FORMAT §10).
	Sign func(manifest []byte) ([]byte, error)
	// Check, if set, makes Export hash every file while it streams it (no
	// second read) and call Check with its name, size and digest after the
	// file is written; an error aborts the export. The command uses it to
	// compare against the manifest (`capsule export --verify`).
	Check func(name string, size int64, d digest.Digest) error
	// Skip, if set, leaves out the files and directories it returns true
	// for (slash-separated names relative to the folder).
	Skip func(name string) bool
	// Progress, if set, receives the content bytes written.
	Progress Progress
	// Context, if set, stops the export at its next write once it is done
	// (the command cancels it on SIGINT and SIGTERM); ExportFile then
	// removes its temporary file.
	Context context.Context
}

// ExportResult describes a finished export.
type ExportResult struct {
	Entries  int           `json:"entries"`  // tar entries, directories included
	Files    int           `json:"files"`    // regular files
	Bytes    int64         `json:"bytes"`    // content bytes of the files
	Written  int64         `json:"written"`  // bytes of the output stream
	Signed   bool          `json:"signed"`   // manifest.json.sig was written
	Manifest digest.Digest `json:"manifest"` // digest of the manifest.json bytes exported
}

// srcEntry is one file or directory of the folder being exported.
type srcEntry struct {
	name  string // slash-separated, relative, no trailing slash
	isDir bool
	size  int64
	data  []byte // contents held in memory (the manifest and its signature)
}

// sortKey orders entries as FORMAT §8.1 says: by name, bytewise, where a
// directory's name ends with "/".
func (e srcEntry) sortKey() string {
	if e.isDir {
		return e.name + "/"
	}
	return e.name
}

// Export writes the capsule folder dir on fsys to w as a tar stream that
// depends only on the folder's contents (FORMAT §8). It reads manifest.json
// once, signs those bytes if cfg.Sign is set, and never copies a
// manifest.json.sig found in the folder or a leftover temporary file.
func Export(fsys vfs.FS, dir string, w io.Writer, cfg ExportConfig) (*ExportResult, error) {
	manifest, err := readManifest(fsys, dir)
	if err != nil {
		return nil, err
	}
	if cfg.OnManifest != nil {
		if err := cfg.OnManifest(manifest); err != nil {
			return nil, fmt.Errorf("export %s: %w", dir, err)
		}
	}
	entries, err := collect(fsys, dir, cfg.Skip)
	if err != nil {
		return nil, err
	}
	res := &ExportResult{Manifest: digest.FromBytes(manifest)}
	if err := attachManifest(entries, manifest, cfg.Sign, res); err != nil {
		return nil, err
	}
	if t, ok := cfg.Progress.(totaler); ok {
		t.SetTotal(entries.total)
	}
	if cfg.Context != nil {
		w = ctxWriter{ctx: cfg.Context, w: w}
	}
	cw := &countWriter{w: w}
	err = writeStream(fsys, dir, cw, entries, cfg, res)
	res.Written = cw.n
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ExportFile is Export into the file out, written atomically (temporary
// file, fsync, rename, fsync of the directory): after a crash out is either
// absent, its old contents, or the complete archive. While the archive is
// being written, every earlyWriteback bytes already written are fsynced in
// the background, so the disk works while the archive is built and the
// final fsync has little left to do.
func ExportFile(fsys vfs.FS, dir, out string, cfg ExportConfig) (*ExportResult, error) {
	if inside(dir, out) {
		return nil, fmt.Errorf("export %s: output %s is inside the capsule folder", dir, out)
	}
	removeStaleTemps(fsys, out)
	tmp, err := tempName(out)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", dir, err)
	}
	defer claim(tmp)()
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", dir, err)
	}
	res, err := exportTo(fsys, dir, f, cfg)
	if err != nil {
		_ = fsys.Remove(tmp)
		return nil, err
	}
	if err := fsys.Rename(tmp, out); err != nil {
		_ = fsys.Remove(tmp)
		return nil, fmt.Errorf("export %s: %w", dir, err)
	}
	if err := fsys.SyncDir(filepath.Dir(out)); err != nil {
		return nil, fmt.Errorf("export %s: sync %s: %w", dir, filepath.Dir(out), err)
	}
	return res, nil
}

// exportTo exports into f, makes f durable and closes it.
func exportTo(fsys vfs.FS, dir string, f vfs.File, cfg ExportConfig) (*ExportResult, error) {
	w := newWriteback(f)
	res, err := Export(fsys, dir, w, cfg)
	if werr := w.wait(); err == nil && werr != nil {
		err = fmt.Errorf("export %s: %w", dir, werr)
	}
	if err == nil {
		if err = f.Sync(); err != nil {
			err = fmt.Errorf("export %s: sync: %w", dir, err)
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("export %s: %w", dir, cerr)
	}
	return res, err
}

// tempName returns a fresh temporary name beside out, recognisable by
// vfs.TempPrefix and carrying this process's PID (owner.go).
func tempName(out string) (string, error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(out), ownedName(tempStem(out), hex.EncodeToString(rnd[:]))), nil
}

func tempStem(out string) string { return vfs.TempPrefix + filepath.Base(out) + "-" }

// removeStaleTemps removes the temporary files that interrupted exports to
// out left behind, when it can prove them stale (owner.go). It is best
// effort: a failure only leaves litter.
func removeStaleTemps(fsys vfs.FS, out string) {
	dir := filepath.Dir(out)
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return
	}
	stem := tempStem(out)
	for _, e := range ents {
		full := filepath.Join(dir, e.Name())
		if e.Type().IsRegular() && staleOwned(e.Name(), stem, full) {
			_ = fsys.Remove(full)
		}
	}
}

// inside reports whether path p lies in or at dir (relative paths are
// taken from the working directory, as vfs.OS takes them).
func inside(dir, p string) bool {
	d, err1 := filepath.Abs(dir)
	q, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, q)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func readManifest(fsys vfs.FS, dir string) ([]byte, error) {
	f, err := fsys.Open(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("export %s: %w", dir, ErrNoManifest)
	}
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", dir, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("export %s: read manifest: %w", dir, err)
	}
	if len(b) > MaxManifestSize {
		return nil, fmt.Errorf("export %s: %w: manifest.json is over %d bytes", dir, ErrLimit, MaxManifestSize)
	}
	return b, nil
}

// sourceEntry describes one directory entry of the folder, or says to leave
// it out: the folder's own signature (a live folder never keeps one), files
// a crash left behind (vfs.TempPrefix), and what skip rejects.
func sourceEntry(de fs.DirEntry, name string, skip func(string) bool) (srcEntry, bool, error) {
	if name == SignatureName || name == ManifestName || strings.HasPrefix(de.Name(), vfs.TempPrefix) {
		return srcEntry{}, false, nil
	}
	if skip != nil && skip(name) {
		return srcEntry{}, false, nil
	}
	switch t := de.Type(); {
	case t.IsDir():
		return srcEntry{name: name, isDir: true}, true, nil
	case t.IsRegular():
		info, err := de.Info()
		if err != nil {
			return srcEntry{}, false, err
		}
		return srcEntry{name: name, size: info.Size()}, true, nil
	default:
		return srcEntry{}, false, fmt.Errorf("%w: %s is %v", ErrSource, name, t)
	}
}

// attachManifest puts the manifest (and its signature) in their sorted place.
func attachManifest(l *folder, manifest []byte, sign func([]byte) ([]byte, error), res *ExportResult) error {
	extra := []srcEntry{{name: ManifestName, size: int64(len(manifest)), data: manifest}}
	if sign != nil {
		sig, err := sign(manifest)
		if err != nil {
			return fmt.Errorf("export: sign: %w", err)
		}
		extra = append(extra, srcEntry{name: SignatureName, size: int64(len(sig)), data: sig})
		res.Signed = true
	}
	l.addRoot(extra...)
	return nil
}
