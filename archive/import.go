package archive

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/agentcapsule/capsule/vfs"
)

// StagingPrefix starts the name of every staging folder Import creates
// beside its destination, so leftovers of a crash are recognisable; the next
// import into the same destination removes them (FORMAT §9.4).
const StagingPrefix = ".capsule-import-"

// ErrNoVerifier is returned by Import when ImportConfig.Verify is nil: an
// import that checks nothing is never what the caller meant.
var ErrNoVerifier = errors.New("archive: no verifier configured")

// ImportConfig controls Import.
type ImportConfig struct {
	// Limits bound the archive; zero fields take their defaults.
	Limits Limits
	// Verify checks the unpacked capsule before it is moved into place. Required.
	Verify Verifier
	// VerifyHashed, if set, is called instead of Verify when Import hashed
	// every blob (artifacts/blobs/<hex>) as it wrote it and each matched
	// its name: it checks the rest and may take the blobs' contents as
	// verified, so that the blobs are read once, from the archive. When a
	// blob does not match its name, Verify runs and reports it.
	VerifyHashed Verifier
	// Trust decides which signatures are accepted. With the zero value a
	// manifest.json.sig must still match the manifest if present.
	Trust Trust
	// Progress, if set, receives the content bytes written.
	Progress Progress
	// Context, if set, stops the import at its next read once it is done
	// (the command cancels it on SIGINT and SIGTERM) and before and after
	// verification; the staging folder is then removed.
	Context context.Context
}

// ImportResult describes a finished import.
type ImportResult struct {
	Dir         string `json:"dir"`              // the destination
	Entries     int    `json:"entries"`          // tar entries read
	Files       int    `json:"files"`            // regular files written
	Bytes       int64  `json:"bytes"`            // content bytes written
	Compression string `json:"compression"`      // "none" or "zstd"
	Signed      bool   `json:"signed"`           // the archive holds manifest.json.sig
	Signer      string `json:"signer,omitempty"` // its key's SHA256 fingerprint
	Trusted     bool   `json:"trusted"`          // an allowed signer made it (Trust.AllowedSigners)
}

// ImportFile is Import of the archive file at path (read through fsys).
func ImportFile(fsys vfs.FS, path, dir string, cfg ImportConfig) (*ImportResult, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	defer f.Close()
	return Import(fsys, f, dir, cfg)
}

// Import unpacks the archive r into the new capsule folder dir (FORMAT §9):
// into a staging folder beside dir, checking every entry; then it runs
// cfg.Verify on the staging folder, syncs every directory, renames the
// staging folder to dir and syncs dir's parent. On any refusal it removes
// the staging folder and dir is never created. dir must not exist, or be an
// empty directory; its parent must exist.
//
// After a crash at any point dir is either absent (or the empty directory
// it was), or complete and verified; a leftover staging folder carries
// StagingPrefix and the PID of its import, and the next import into dir
// removes it once that import is provably gone (owner.go).
func Import(fsys vfs.FS, r io.Reader, dir string, cfg ImportConfig) (*ImportResult, error) {
	if cfg.Verify == nil {
		return nil, ErrNoVerifier
	}
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := checkDest(fsys, dir); err != nil {
		return nil, err
	}
	removeStaging(fsys, parent, base)
	staging, err := makeStaging(fsys, parent, base)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", dir, err)
	}
	defer claim(staging)()
	if cfg.Context != nil {
		r = ctxReader{ctx: cfg.Context, r: r}
	}
	res, err := importInto(fsys, r, staging, cfg)
	if err != nil {
		_ = fsys.RemoveAll(staging)
		return nil, fmt.Errorf("import %s: %w", dir, err)
	}
	if err := fsys.Rename(staging, dir); err != nil {
		_ = fsys.RemoveAll(staging)
		return nil, fmt.Errorf("import %s: %w", dir, err)
	}
	if err := fsys.SyncDir(parent); err != nil {
		return nil, fmt.Errorf("import %s: sync parent: %w", dir, err)
	}
	res.Dir = dir
	return res, nil
}

// importInto unpacks, verifies and syncs the staging folder.
func importInto(fsys vfs.FS, r io.Reader, staging string, cfg ImportConfig) (*ImportResult, error) {
	lim := cfg.Limits.withDefaults()
	src, comp, closeFn, err := openStream(r, lim)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	x := newExtractor(fsys, staging, lim, false, cfg.Progress)
	x.hashBlobs = cfg.VerifyHashed != nil
	ctx := orBackground(cfg.Context)
	if err := x.run(src); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	verify := cfg.Verify
	if x.hashBlobs && x.badBlobs == 0 {
		verify = cfg.VerifyHashed
	}
	problems, err := verify(fsys, staging)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := CheckSignature(fsys, staging, cfg.Trust)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	if problems = append(problems, st.Problems...); len(problems) > 0 {
		return nil, &VerifyError{Problems: problems}
	}
	if err := x.syncAll(); err != nil {
		return nil, err
	}
	return &ImportResult{Entries: x.entries, Files: x.files, Bytes: x.total, Compression: comp.String(),
		Signed: st.Present, Signer: st.Signer, Trusted: st.Trusted}, nil
}

// checkDest accepts a destination that does not exist or is an empty
// directory, and whose parent is a directory.
func checkDest(fsys vfs.FS, dir string) error {
	parent := filepath.Dir(dir)
	if info, err := fsys.Stat(parent); err != nil || !info.IsDir() {
		return fmt.Errorf("import %s: parent directory %s does not exist", dir, parent)
	}
	info, err := fsys.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("import %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("import %s: %w (it is not a directory)", dir, ErrDestExists)
	}
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("import %s: %w", dir, err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("import %s: %w (%d entries)", dir, ErrDestExists, len(ents))
	}
	return nil
}

// stagingStem is the part of a staging folder's name fixed by its
// destination: the prefix and a short hash of the destination's base name
// (a hash, so any base name gives a short, unambiguous stem).
func stagingStem(base string) string {
	sum := sha256.Sum256([]byte(base))
	return StagingPrefix + hex.EncodeToString(sum[:6]) + "-"
}

// makeStaging creates a fresh staging folder beside the destination,
// named with this process's PID.
func makeStaging(fsys vfs.FS, parent, base string) (string, error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	staging := filepath.Join(parent, ownedName(stagingStem(base), hex.EncodeToString(rnd[:])))
	if err := fsys.Mkdir(staging, DirMode); err != nil {
		return "", err
	}
	return staging, nil
}

// removeStaging removes the staging folders that crashed or interrupted
// imports into parent/base left behind, when it can prove them stale
// (owner.go). It is best effort: a failure only leaves litter.
func removeStaging(fsys vfs.FS, parent, base string) {
	ents, err := fsys.ReadDir(parent)
	if err != nil {
		return
	}
	stem := stagingStem(base)
	for _, e := range ents {
		full := filepath.Join(parent, e.Name())
		if e.IsDir() && staleOwned(e.Name(), stem, full) {
			_ = fsys.RemoveAll(full)
		}
	}
}
