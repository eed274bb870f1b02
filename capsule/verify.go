package capsule

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/dirlist"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// ProblemKind classifies a problem Verify found.
type ProblemKind string

// The kinds of problem (FORMAT §3.4). The last four appear only as warnings.
const (
	KindMissing     ProblemKind = "missing"     // a file the layout, manifest or snapshot requires is absent
	KindUnexpected  ProblemKind = "unexpected"  // a file, directory or link the layout does not allow
	KindSize        ProblemKind = "size"        // size differs from the manifest (truncated or grown)
	KindDigest      ProblemKind = "digest"      // content differs from the manifest's digest
	KindCorrupt     ProblemKind = "corrupt"     // a blob whose content does not hash to its name
	KindReference   ProblemKind = "reference"   // snapshot.json disagrees with the blob it references
	KindManifest    ProblemKind = "manifest"    // manifest.json is malformed
	KindSchema      ProblemKind = "schema"      // a version this release cannot read, or inconsistent versions
	KindSnapshot    ProblemKind = "snapshot"    // snapshot.json is malformed
	KindEnvironment ProblemKind = "environment" // spec.json is malformed or breaks the secret rules
	KindJournal     ProblemKind = "journal"     // the journal tail or its committed prefix is wrong
	KindSignature   ProblemKind = "signature"   // manifest.json.sig does not verify
	KindIO          ProblemKind = "io"          // a file could not be read

	KindUnreferenced ProblemKind = "unreferenced" // warning: an intact blob nothing references
	KindLeftover     ProblemKind = "leftover"     // warning: a temporary file or an interrupted commit
	KindQuarantine   ProblemKind = "quarantine"   // warning: a torn journal line set aside
	KindUnchecked    ProblemKind = "unchecked"    // warning: something present that no check was given
)

// Problem is one thing wrong with a capsule, naming the file.
type Problem struct {
	Path   string      `json:"path"`
	Kind   ProblemKind `json:"kind"`
	Detail string      `json:"detail"`
}

// String formats p as one line: "path: kind: detail".
func (p Problem) String() string { return p.Path + ": " + string(p.Kind) + ": " + p.Detail }

// Report is the result of Verify. The capsule verifies when Problems is
// empty; Warnings never fail verification.
type Report struct {
	ID       string    `json:"id,omitempty"`
	Problems []Problem `json:"problems"`
	Warnings []Problem `json:"warnings"`
	Files    int       `json:"files"` // layout files and journal checked
	Blobs    int       `json:"blobs"` // blobs checked
	Bytes    int64     `json:"bytes"` // bytes hashed
}

// OK reports whether the capsule verified.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Err returns nil when r is OK, else a *VerifyError holding r.
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	return &VerifyError{Report: r}
}

// ErrVerify marks a capsule that failed verification.
var ErrVerify = errors.New("capsule: verification failed")

// VerifyError is a failed verification with its report.
type VerifyError struct{ Report *Report }

// Error counts the problems and names the first.
func (e *VerifyError) Error() string {
	n := len(e.Report.Problems)
	return fmt.Sprintf("capsule: verification failed: %d problem(s), first: %s", n, e.Report.Problems[0])
}

// Unwrap makes errors.Is(err, ErrVerify) true.
func (e *VerifyError) Unwrap() error { return ErrVerify }

// VerifyOptions plugs in checks that live in other packages, and progress.
type VerifyOptions struct {
	// JournalTail checks the uncommitted tail of the journal (the bytes
	// after the committed prefix) by hash chain, continuing from the
	// committed heads. Nil leaves a non-empty tail unchecked (a warning).
	JournalTail func(tail io.Reader, committed manifest.Journal) []Problem
	// Signature checks manifest.json.sig, when present, against the exact
	// manifest bytes. Nil leaves a signature unchecked (a warning).
	Signature func(manifest, sig []byte) error
	// Progress receives the bytes hashed; if it also has SetTotal(int64),
	// it is told the total first.
	Progress Progress
	// Workers is how many files are hashed at once; 0 means one per CPU.
	Workers int
	// BlobsHashed says the caller hashed every blob file's content and found
	// that it matches the file's name: an import does as it writes them
	// (archive.ImportConfig.VerifyHashed). Verify then takes each blob's
	// size from the file system and does not read it; everything else is
	// checked as usual.
	BlobsHashed bool
}

// Verify checks the capsule folder dir offline and reports every problem
// (FORMAT §3): the manifest's structure and versions; the digest and size of
// every layout file; the committed journal prefix by digest and the tail by
// opts.JournalTail; every blob's content against its name; every reference
// of snapshot.json; the environment spec; unexpected files; and the
// signature by opts.Signature. It reads only. A commit interrupted after its
// commit point is verified as the state it commits. The error is non-nil
// only when dir cannot be read at all.
func Verify(fsys vfs.FS, dir string, opts VerifyOptions) (*Report, error) {
	fi, err := fsys.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("verify: %s is not a directory", dir)
	}
	v := &verifier{view: newView(fsys, dir), opts: opts, present: map[string]fs.FileMode{}, missing: map[string]bool{}}
	v.run()
	return v.report(), nil
}

type verifier struct {
	*view
	opts VerifyOptions

	mu       sync.Mutex
	problems []Problem
	warnings []Problem
	bytes    int64
	files    int

	m         *manifest.Manifest
	mbytes    []byte
	present   map[string]fs.FileMode // slash path -> type, from the walk; blobs are in blobs
	blobs     blobTable              // the intact-named blob files and their sizes
	refsKnown bool                   // the snapshot (or an attachment) said what is referenced
	missing   map[string]bool        // hex of referenced blobs found absent, reported once
	attached  []attached             // attachments of the committed journal
}

// attached is one attachment of a journal event: a blob reference.
type attached struct {
	event string
	blob  digest.Digest
	size  int64
}

func (v *verifier) problem(p string, kind ProblemKind, format string, args ...any) {
	v.add(&v.problems, Problem{Path: p, Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

func (v *verifier) warn(p string, kind ProblemKind, format string, args ...any) {
	v.add(&v.warnings, Problem{Path: p, Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

func (v *verifier) add(list *[]Problem, p Problem) {
	v.mu.Lock()
	*list = append(*list, p)
	v.mu.Unlock()
}

func (v *verifier) run() {
	v.readManifest()
	v.walk(".")
	v.blobs.sort()
	v.checkLayoutPresence()
	v.hashAll()
	v.checkSnapshot()
	v.checkAttachments()
	v.checkEnvironment()
	v.checkIndex()
	v.checkOriginals()
	v.checkUnreferenced()
	v.checkSignature()
}

func (v *verifier) report() *Report {
	r := &Report{Problems: sortProblems(v.problems), Warnings: sortProblems(v.warnings), Files: v.files, Blobs: v.blobs.n, Bytes: v.bytes}
	if v.m != nil {
		r.ID = v.m.Agent.ID
	}
	if r.Problems == nil {
		r.Problems = []Problem{}
	}
	if r.Warnings == nil {
		r.Warnings = []Problem{}
	}
	return r
}

func sortProblems(ps []Problem) []Problem {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Detail < b.Detail
	})
	return ps
}

// readManifest reads and parses the manifest of the view, reporting each
// problem of its structure and versions.
func (v *verifier) readManifest() {
	if v.pending {
		v.warn(PendingDir, KindLeftover, "a commit was interrupted after its commit point; verifying the state it commits (the next open completes it)")
	} else if v.aborted {
		v.warn(PendingDir, KindLeftover, "a commit was interrupted before its commit point; it is ignored (the next open removes it)")
	}
	b, err := readLimited(v.fsys, v.manifestPath(), manifest.MaxSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.problem(manifest.FileName, KindMissing, "no manifest: this is not a capsule, or its root file was deleted")
		return
	case errors.Is(err, ErrTooLarge):
		v.problem(manifest.FileName, KindManifest, "larger than %d bytes", manifest.MaxSize)
		return
	case err != nil:
		v.problem(manifest.FileName, KindIO, "%v", err)
		return
	}
	v.mbytes = b
	m, err := manifest.Parse(b)
	var pe *manifest.ParseError
	var ve *manifest.VersionError
	switch {
	case errors.As(err, &pe):
		for _, p := range pe.Problems {
			v.problem(manifest.FileName, KindManifest, "%s", p)
		}
		return
	case errors.As(err, &ve):
		v.problem(manifest.FileName, KindSchema, "%s", strings.TrimPrefix(ve.Error(), "manifest: "))
		return
	case err != nil:
		v.problem(manifest.FileName, KindManifest, "%v", err)
		return
	}
	for _, e := range refusals(m) {
		v.problem(manifest.FileName, KindSchema, "%s", e)
	}
	v.m = m
}

// walk lists the tree below rel, classifying every entry; the blobs go
// into v.blobs, not v.present, so that a million of them cost 40 MB.
func (v *verifier) walk(rel string) {
	err := dirlist.Each(v.fsys, hostPath(v.dir, rel), func(e fs.DirEntry) error {
		if rel == manifest.BlobsDir && e.Type().IsRegular() && digest.IsHex(e.Name()) {
			v.addBlob(e)
			return nil
		}
		p := path.Join(rel, e.Name())
		v.present[p] = e.Type()
		v.classify(p, e.Type())
		return nil
	})
	if err != nil {
		v.problem(rel, KindIO, "cannot list: %v", err)
	}
}

// addBlob records a blob file with its size (-1 if it cannot be had now:
// hashing it reports why).
func (v *verifier) addBlob(e fs.DirEntry) {
	size := int64(-1)
	if fi, err := e.Info(); err == nil {
		size = fi.Size()
	}
	v.blobs.addHex(e.Name(), size)
}

// classify decides what one entry of the tree is (FORMAT §1, §3.2).
func (v *verifier) classify(p string, t fs.FileMode) {
	base := path.Base(p)
	switch {
	case t.IsDir() && isLayoutDir(p):
		v.walk(p)
	case p == PendingDir && t.IsDir():
		// staged files are read through the view
	case isTemp(base) && t.IsRegular():
		v.warn(p, KindLeftover, "temporary file of an interrupted write (the next open removes it)")
	case t.IsRegular() && (p == manifest.FileName || p == manifest.JournalPath || isLayoutFile(p)):
		// checked against the manifest
	case t.IsRegular() && p == manifest.SignatureName:
		// checked by checkSignature
	case t.IsRegular() && strings.HasPrefix(p, manifest.JournalPath+QuarantineSuffix):
		v.warn(p, KindQuarantine, "a torn journal line set aside after a crash; inspect it and delete it")
	default:
		v.problem(p, KindUnexpected, "%s not allowed by the layout (FORMAT §1)", describe(t))
	}
}

// QuarantineSuffix starts the suffix of the files the journal sets a torn
// last line aside in: memory/timeline_events.jsonl.quarantine-<n> (FORMAT §7).
const QuarantineSuffix = ".quarantine-"

func isLayoutDir(p string) bool {
	for _, d := range layoutDirs {
		if d == p {
			return true
		}
	}
	return false
}

func describe(t fs.FileMode) string {
	switch {
	case t.IsDir():
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t.IsRegular():
		return "a file"
	}
	return "a special file"
}

// checkLayoutPresence reports missing layout directories and files.
func (v *verifier) checkLayoutPresence() {
	for _, d := range layoutDirs {
		if _, ok := v.present[d]; !ok {
			v.problem(d, KindMissing, "layout directory missing")
		}
	}
	for _, f := range append([]string{manifest.JournalPath}, manifest.LayoutFiles...) {
		if _, ok := v.present[f]; !ok && !v.isStaged(f) {
			v.problem(f, KindMissing, "layout file missing")
		}
	}
}
