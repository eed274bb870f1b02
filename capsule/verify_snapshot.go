package capsule

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
)

// checkSnapshot reads snapshot.json entry by entry and checks every blob it
// references is present with the recorded size (FORMAT §5.1). What it
// learns counts only once the whole snapshot is found valid.
func (v *verifier) checkSnapshot() {
	rel := manifest.SnapshotPath
	if t, ok := v.present[rel]; (!ok || !t.IsRegular()) && !v.isStaged(rel) {
		return
	}
	var refs []Problem
	check := func(e Entry) error {
		if e.Type == TypeFile {
			refs = v.checkReference(e, refs)
		}
		return nil
	}
	version, err := v.streamSnapshot(rel, check)
	if errors.Is(err, errShape) {
		v.forgetRefs()
		refs = nil
		version, err = v.parseSnapshot(rel, check)
	}
	if err != nil {
		v.forgetRefs()
		if errors.Is(err, ErrBadSnapshot) {
			v.problem(rel, KindSnapshot, "%s", strings.TrimPrefix(err.Error(), "capsule: "))
		}
		return
	}
	if v.m != nil && v.m.Schemas["snapshot"] != version {
		v.problem(rel, KindSchema, "version %d, the manifest says snapshot schema %d", version, v.m.Schemas["snapshot"])
	}
	v.refsKnown = true
	for _, pr := range refs {
		v.add(&v.problems, pr)
	}
}

// streamSnapshot streams the view's snapshot.json through fn; an error
// that is neither ErrBadSnapshot nor errShape is already reported.
func (v *verifier) streamSnapshot(rel string, fn func(Entry) error) (int, error) {
	f, err := v.fsys.Open(v.file(rel))
	if err != nil {
		v.problem(rel, KindIO, "%v", err)
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxSnapshotSize {
		v.problem(rel, KindSize, "larger than %d bytes", MaxSnapshotSize)
		return 0, ErrTooLarge
	}
	version, err := streamSnapshot(io.LimitReader(f, MaxSnapshotSize), fn)
	if err != nil && !errors.Is(err, errShape) && !errors.Is(err, ErrBadSnapshot) {
		v.problem(rel, KindIO, "%v", err)
	}
	return version, err
}

// parseSnapshot is streamSnapshot for a snapshot.json not in Marshal's
// shape: parsed whole by ParseSnapshot.
func (v *verifier) parseSnapshot(rel string, fn func(Entry) error) (int, error) {
	b, ok := v.readWhole(rel, MaxSnapshotSize)
	if !ok {
		return 0, ErrTooLarge // reported by readWhole
	}
	s, err := ParseSnapshot(b)
	if err != nil {
		return 0, err
	}
	for _, e := range s.Entries {
		_ = fn(e)
	}
	return s.Version, nil
}

// forgetRefs forgets what a snapshot that turned out invalid referenced.
func (v *verifier) forgetRefs() {
	v.blobs.clearRefs()
	v.missing = map[string]bool{}
}

// refer marks blob hx referenced and returns its size on disk (ok false:
// absent) and, for an absent blob, whether this is its first reference.
func (v *verifier) refer(hx string) (size int64, ok, first bool) {
	i, ok := v.blobs.find(hx)
	if !ok {
		first = !v.missing[hx]
		v.missing[hx] = true
		return 0, false, first
	}
	v.blobs.refer(i)
	return v.blobs.at(i).size, true, false
}

// checkReference appends to refs what is wrong with the blob of file entry e.
func (v *verifier) checkReference(e Entry, refs []Problem) []Problem {
	hx := e.Blob.Hex()
	switch size, ok, first := v.refer(hx); {
	case !ok && first:
		refs = append(refs, Problem{Path: manifest.BlobsDir + "/" + hx, Kind: KindMissing, Detail: fmt.Sprintf("blob of snapshot entry %q is missing", clip(e.Path))})
	case ok && size >= 0 && size != e.Size:
		refs = append(refs, Problem{Path: manifest.SnapshotPath, Kind: KindReference, Detail: fmt.Sprintf("entry %q says %d bytes, blob %s has %d", clip(e.Path), e.Size, digest.Digest(e.Blob).Short(), size)})
	}
	return refs
}
