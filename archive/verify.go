package archive

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/signature"
	"github.com/agentcapsule/capsule/vfs"
)

// maxSignatureSize bounds the manifest.json.sig a check reads.
const maxSignatureSize = 1 << 20

// VerifyPrefix starts the name of the temporary folder Verify unpacks into.
const VerifyPrefix = ".capsule-verify-"

// Trust says which signatures a check accepts. The zero value only checks
// that a signature, if present, matches the manifest under its own key.
type Trust struct {
	// AllowedSigners is the content of an OpenSSH allowed_signers file. If
	// set, a signature is required and must come from a signer it lists
	// for Identity (FORMAT §10.3).
	AllowedSigners []byte
	// Identity is the principal the signer must be allowed as.
	Identity string
	// Now is the time valid-after and valid-before are checked against;
	// the zero value means the current time.
	Now time.Time
}

// SignatureStatus is what a check learned about manifest.json.sig.
type SignatureStatus struct {
	Present  bool      `json:"present"`            // the folder or archive holds manifest.json.sig
	Signer   string    `json:"signer,omitempty"`   // SHA256 fingerprint of the key, if the signature matches the manifest
	Trusted  bool      `json:"trusted"`            // an allowed signer for the identity made it
	Problems []Problem `json:"problems,omitempty"` // what is wrong, if anything
}

// CheckSignature checks the manifest.json.sig of the capsule folder dir, if
// any, against its manifest.json and, if trust names allowed signers,
// against them (FORMAT §10.3). Problems are returned in the status; the
// error is for a failure to read.
func CheckSignature(fsys vfs.FS, dir string, trust Trust) (SignatureStatus, error) {
	var st SignatureStatus
	sig, err := readLimited(fsys, filepath.Join(dir, SignatureName), maxSignatureSize)
	if errors.Is(err, fs.ErrNotExist) {
		if trust.AllowedSigners != nil {
			st.Problems = append(st.Problems, sigProblem("the capsule is not signed, but allowed signers were given"))
		}
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.Present = true
	manifest, err := readLimited(fsys, filepath.Join(dir, ManifestName), MaxManifestSize)
	if errors.Is(err, fs.ErrNotExist) {
		st.Problems = append(st.Problems, sigProblem("there is no manifest.json to check it against"))
		return st, nil
	}
	if err != nil {
		return st, err
	}
	key, err := signature.Check(manifest, sig)
	if err != nil {
		st.Problems = append(st.Problems, sigProblem(err.Error()))
		return st, nil
	}
	st.Signer = signature.Fingerprint(key)
	if trust.AllowedSigners == nil {
		return st, nil
	}
	now := trust.Now
	if now.IsZero() {
		now = time.Now()
	}
	if err := signature.VerifyAt(manifest, sig, bytes.NewReader(trust.AllowedSigners), trust.Identity, now); err != nil {
		st.Problems = append(st.Problems, sigProblem(err.Error()))
		return st, nil
	}
	st.Trusted = true
	return st, nil
}

func sigProblem(detail string) Problem {
	return Problem{Path: SignatureName, Kind: KindSignature, Detail: detail}
}

// readLimited reads at most max bytes of name; a longer file is an error.
func readLimited(fsys vfs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: over %d bytes", name, ErrLimit, max)
	}
	return b, nil
}

// VerifyConfig controls Verify.
type VerifyConfig struct {
	// Limits bound the archive; zero fields take their defaults.
	Limits Limits
	// Verify checks the unpacked capsule. Required.
	Verify Verifier
	// TempDir is where the archive is unpacked; "" means os.TempDir().
	TempDir string
	// Trust decides which signatures are accepted.
	Trust Trust
	// Progress, if set, receives the content bytes unpacked.
	Progress Progress
}

// Report is the outcome of Verify: every problem found, in order: the
// archive's own (refused entries, limits, a corrupt stream), then the
// verifier's, then the signature's.
type Report struct {
	Problems    []Problem       `json:"problems"`
	Entries     int             `json:"entries"`
	Files       int             `json:"files"`
	Bytes       int64           `json:"bytes"`
	Compression string          `json:"compression"`
	Signature   SignatureStatus `json:"signature"`
}

// OK reports whether the archive has no problem at all.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Verify checks the archive file at path as `capsule verify` does: it
// unpacks it into a temporary folder under cfg.TempDir with every check of
// Import, but records a refused entry and goes on where that is safe; runs
// the verifier and the signature check; removes the folder; and returns
// the full problem list. An error means the check could not run.
func Verify(fsys vfs.FS, path string, cfg VerifyConfig) (*Report, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", path, err)
	}
	defer f.Close()
	return VerifyReader(fsys, f, cfg)
}

// VerifyReader is Verify of an archive stream.
func VerifyReader(fsys vfs.FS, r io.Reader, cfg VerifyConfig) (*Report, error) {
	if cfg.Verify == nil {
		return nil, ErrNoVerifier
	}
	tmp := cfg.TempDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	staging := filepath.Join(tmp, VerifyPrefix+hex.EncodeToString(rnd[:]))
	if err := fsys.Mkdir(staging, 0o700); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer fsys.RemoveAll(staging)
	return verifyInto(fsys, r, staging, cfg)
}

func verifyInto(fsys vfs.FS, r io.Reader, staging string, cfg VerifyConfig) (*Report, error) {
	lim := cfg.Limits.withDefaults()
	rep := &Report{Compression: None.String()}
	src, comp, closeFn, err := openStream(r, lim)
	if err != nil {
		rep.Problems = append(rep.Problems, Problem{Kind: KindArchive, Detail: err.Error()})
		return rep, nil
	}
	defer closeFn()
	rep.Compression = comp.String()
	x := newExtractor(fsys, staging, lim, true, cfg.Progress)
	err = x.run(src)
	var ie ioError
	if errors.As(err, &ie) {
		return nil, fmt.Errorf("verify: %w", err)
	}
	rep.Problems = append(rep.Problems, x.problems...)
	if err != nil {
		rep.Problems = append(rep.Problems, entryProblem(err))
	}
	rep.Entries, rep.Files, rep.Bytes = x.entries, x.files, x.total
	problems, err := cfg.Verify(fsys, staging)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	rep.Problems = append(rep.Problems, problems...)
	st, err := CheckSignature(fsys, staging, cfg.Trust)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	rep.Signature = st
	rep.Problems = append(rep.Problems, st.Problems...)
	return rep, nil
}
