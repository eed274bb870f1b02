package capsule

import (
	"bufio"
	"encoding/hex"
	"errors"
	"io"
	"sort"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
)

// maxSignatureSize bounds manifest.json.sig; an SSH signature is about 1 KiB.
const maxSignatureSize = 64 << 10

// hashJob is one file to hash.
type hashJob struct {
	rel  string // slash path in the capsule
	host string
	size int64
	run  func(j hashJob, p Progress)
}

// hashAll hashes the layout files, the journal's committed prefix and every
// blob on opts.Workers goroutines: the files of pipelineMin bytes or more
// largest first on one set of workers, so that no large file is left for
// the end while the others idle; beside them, hashFiles hashes the other
// blobs in the table's order (two at once per core on the host). Only the
// large blobs' indices are held for this, not an order of every blob.
func (v *verifier) hashAll() {
	var jobs []hashJob
	if v.m != nil {
		for _, f := range manifest.LayoutFiles {
			if j, ok := v.job(f, v.checkLayoutFile); ok {
				jobs = append(jobs, j)
			}
		}
		if j, ok := v.job(manifest.JournalPath, v.checkJournal); ok {
			jobs = append(jobs, j)
		}
	}
	var total int64
	for _, j := range jobs {
		total += j.size
	}
	var large []int // jobs are 0..len(jobs)-1, blob i is len(jobs)+i
	isLarge := make([]uint64, (v.blobs.n+63)/64)
	for i := range v.blobs.n {
		size := v.blobs.at(i).size
		if !v.opts.BlobsHashed || size < 0 {
			total += max(size, 0)
		}
		if size >= pipelineMin {
			large = append(large, len(jobs)+i)
			isLarge[i/64] |= 1 << (i % 64)
		}
	}
	size := func(k int) int64 {
		if k < len(jobs) {
			return jobs[k].size
		}
		return v.blobs.at(k - len(jobs)).size
	}
	for k := range jobs {
		large = append(large, k)
	}
	sort.SliceStable(large, func(a, b int) bool { return size(large[a]) > size(large[b]) })
	if st, ok := v.opts.Progress.(interface{ SetTotal(int64) }); ok {
		st.SetTotal(total)
	}
	p := newLockedProgress(v.opts.Progress)
	// The layout files, the journal and the large blobs, largest first, on
	// one set of workers; the other blobs through hashFiles, which on the
	// host hashes two small files at once per core (digest.Blocks2).
	var wg sync.WaitGroup
	wg.Go(func() {
		par.Do(len(large), workers(v.opts.Workers), func(i int) {
			k := large[i]
			if k < len(jobs) {
				jobs[k].run(jobs[k], p)
				return
			}
			v.checkBlob(k-len(jobs), p)
		})
	})
	hashFiles(v.fsys, smallBlobs{v: v, large: isLarge}, v.opts.Workers, p, func(i int, d digest.Digest, n int64, err error) {
		v.blobHashed(i, d, n, err)
	})
	wg.Wait()
}

// smallBlobs is the hashList of the blobs hashAll leaves to hashFiles:
// those not marked large and not hashed already by the caller. Paths are
// made one at a time, so no list of a million names is held.
type smallBlobs struct {
	v     *verifier
	large []uint64 // bit i: blob i is hashed with the large files
}

// Len returns the number of blobs in the table.
func (s smallBlobs) Len() int { return s.v.blobs.n }

// Target returns blob i's path and size, or false if it is not to be hashed here.
func (s smallBlobs) Target(i int) (hashTarget, bool) {
	b := s.v.blobs.at(i)
	if s.large[i/64]&(1<<(i%64)) != 0 || (s.v.opts.BlobsHashed && b.size >= 0) {
		return hashTarget{}, false
	}
	return hashTarget{name: s.v.file(manifest.BlobsDir + "/" + hex.EncodeToString(b.key[:])), size: b.size}, true
}

// job prepares the check of rel if it is a regular file of the view.
func (v *verifier) job(rel string, run func(hashJob, Progress)) (hashJob, bool) {
	host := v.file(rel)
	fi, err := v.fsys.Lstat(host)
	if err != nil || !fi.Mode().IsRegular() {
		return hashJob{}, false // missing or unexpected: reported by the walk
	}
	return hashJob{rel: rel, host: host, size: fi.Size(), run: run}, true
}

func (v *verifier) hashed(n int64, file bool) {
	v.mu.Lock()
	v.bytes += n
	if file {
		v.files++
	}
	v.mu.Unlock()
}

// checkLayoutFile compares one layout file with its manifest entry (FORMAT §3.1).
func (v *verifier) checkLayoutFile(j hashJob, p Progress) {
	want, ok := v.m.File(j.rel)
	if !ok {
		return // the manifest's own problem, already reported
	}
	if j.size != want.Size {
		v.hashed(0, true)
		v.problem(j.rel, KindSize, "%d bytes, the manifest says %d (truncated or changed)", j.size, want.Size)
		return
	}
	got, n, err := hashFile(v.fsys, j.host, j.size, p)
	v.hashed(n, true)
	switch {
	case err != nil:
		v.problem(j.rel, KindIO, "%v", err)
	case got != want.Digest:
		v.problem(j.rel, KindDigest, "content hashes to %s, the manifest says %s (changed)", got.Short(), want.Digest.Short())
	}
}

// checkJournal checks the committed prefix by digest and hands the tail to
// opts.JournalTail (FORMAT §3.3).
func (v *verifier) checkJournal(j hashJob, p Progress) {
	want := v.m.Journal
	if j.size < want.Bytes {
		v.hashed(0, true)
		v.problem(j.rel, KindSize, "%d bytes, fewer than the %d the manifest commits (truncated)", j.size, want.Bytes)
		return
	}
	f, err := v.fsys.Open(j.host)
	if err != nil {
		v.problem(j.rel, KindIO, "%v", err)
		return
	}
	defer f.Close()
	last := &lastByte{r: io.LimitReader(f, want.Bytes)}
	got, n, err := hashReader(last, p)
	v.hashed(n, true)
	switch {
	case err != nil:
		v.problem(j.rel, KindIO, "%v", err)
		return
	case got != want.Digest:
		v.problem(j.rel, KindDigest, "the committed %d bytes hash to %s, the manifest says %s (changed)", want.Bytes, got.Short(), want.Digest.Short())
		return
	case want.Bytes > 0 && last.b != '\n':
		v.problem(j.rel, KindJournal, "the committed prefix does not end with a newline")
	}
	v.scanAttachments(j.rel, io.NewSectionReader(f, 0, want.Bytes))
	v.checkTail(j, f, want)
}

// scanAttachments collects the blob references of the attachments of the
// committed journal (FORMAT §3.2): only lines that name attachments are
// decoded.
func (v *verifier) scanAttachments(rel string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), journal.MaxLine+1)
	for n := 1; sc.Scan(); n++ {
		id, as, err := journal.LineAttachments(sc.Bytes())
		if err != nil {
			v.problem(rel, KindJournal, "line %d names attachments but does not decode: %v", n, err)
			continue
		}
		for _, a := range as {
			d, err := digest.Parse(a.Blob)
			if err != nil {
				v.problem(rel, KindJournal, "line %d: attachment blob %q: %v", n, clip(a.Blob), err)
				continue
			}
			v.mu.Lock()
			v.attached = append(v.attached, attached{event: id, blob: d, size: a.Size})
			v.mu.Unlock()
		}
	}
	if err := sc.Err(); err != nil {
		v.problem(rel, KindJournal, "scanning for attachments: %v", err)
	}
}

// checkAttachments checks every blob an attachment of the committed
// journal names is present with the recorded size; such blobs are
// referenced, not unreferenced (FORMAT §3.2).
func (v *verifier) checkAttachments() {
	if len(v.attached) == 0 {
		return
	}
	v.refsKnown = true
	for _, a := range v.attached {
		hx := a.blob.Hex()
		switch size, ok, first := v.refer(hx); {
		case !ok && first:
			v.problem(manifest.BlobsDir+"/"+hx, KindMissing, "blob of an attachment of event %s is missing", clip(a.event))
		case ok && size >= 0 && size != a.size:
			v.problem(manifest.JournalPath, KindReference, "event %s attaches blob %s of %d bytes, the blob has %d", clip(a.event), a.blob.Short(), a.size, size)
		}
	}
}

func (v *verifier) checkTail(j hashJob, f io.ReaderAt, want manifest.Journal) {
	tail := j.size - want.Bytes
	if tail == 0 {
		return
	}
	if v.opts.JournalTail == nil {
		v.warn(j.rel, KindUnchecked, "%d bytes after the committed prefix (an uncommitted tail) were not checked", tail)
		return
	}
	for _, pr := range v.opts.JournalTail(io.NewSectionReader(f, want.Bytes, tail), want) {
		if pr.Path == "" {
			pr.Path = j.rel
		}
		if pr.Kind == "" {
			pr.Kind = KindJournal
		}
		v.add(&v.problems, pr)
	}
}

// lastByte remembers the last byte read through it.
type lastByte struct {
	r io.Reader
	b byte
}

func (l *lastByte) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.b = p[n-1]
	}
	return n, err
}

// corruptBlob marks a blob whose content does not match its name.
const corruptBlob = -2

// checkBlob hashes blob i and compares it with its name (FORMAT §5.2).
func (v *verifier) checkBlob(i int, p Progress) {
	b := v.blobs.at(i)
	if v.opts.BlobsHashed && b.size >= 0 {
		return // the caller hashed it; its size is from the walk
	}
	got, n, err := hashFile(v.fsys, v.file(manifest.BlobsDir+"/"+hex.EncodeToString(b.key[:])), b.size, p)
	v.blobHashed(i, got, n, err)
}

// blobHashed records the outcome of hashing blob i: its size, or a problem
// if it could not be read or hashes to another name.
func (v *verifier) blobHashed(i int, got digest.Digest, n int64, err error) {
	b := v.blobs.at(i)
	hx := hex.EncodeToString(b.key[:])
	rel := manifest.BlobsDir + "/" + hx
	v.hashed(n, false)
	size := n
	switch {
	case err != nil:
		v.problem(rel, KindIO, "%v", err)
		size = corruptBlob
	case got.Hex() != hx:
		v.problem(rel, KindCorrupt, "content hashes to %s, not to its name", got.Short())
		size = corruptBlob
	}
	b.size = size // each worker writes its own records; read after par.Do
}

// readWhole reads a layout file of the view if it is present and regular.
func (v *verifier) readWhole(rel string, limit int64) ([]byte, bool) {
	if t, ok := v.present[rel]; (!ok || !t.IsRegular()) && !v.isStaged(rel) {
		return nil, false
	}
	b, err := readLimited(v.fsys, v.file(rel), limit)
	switch {
	case errors.Is(err, ErrTooLarge):
		v.problem(rel, KindSize, "larger than %d bytes", limit)
		return nil, false
	case err != nil:
		v.problem(rel, KindIO, "%v", err)
		return nil, false
	}
	return b, true
}

// checkEnvironment validates spec.json against its schema and the secret
// rules (FORMAT §6).
func (v *verifier) checkEnvironment() {
	rel := manifest.EnvironmentPath
	b, ok := v.readWhole(rel, envspec.MaxSize)
	if !ok {
		return
	}
	if v.m != nil && !schema.CanRead(schema.Environment, schemaVersion(v.m, schema.Environment)) {
		return // refused with the manifest's versions
	}
	version, verr := envspec.ReadVersion(b)
	if verr == nil && v.m != nil && v.m.Schemas["environment"] != version {
		v.problem(rel, KindSchema, "version %d, the manifest says environment schema %d", version, v.m.Schemas["environment"])
		return
	}
	if verr == nil && !schema.CanRead(schema.Environment, version) {
		return // refused with the manifest's versions
	}
	_, err := envspec.Parse(b) // an older version is migrated in memory (FORMAT §11.4)
	var pe *envspec.ParseError
	switch {
	case errors.As(err, &pe):
		for _, p := range pe.Problems {
			v.problem(rel, KindEnvironment, "%s", p)
		}
	case err != nil:
		v.problem(rel, KindEnvironment, "%v", err)
	}
}

// checkUnreferenced warns about intact blobs the snapshot does not
// reference: harmless (their names prove their content) but worth pruning.
func (v *verifier) checkUnreferenced() {
	if !v.refsKnown {
		return // the snapshot could not be read: no basis to judge
	}
	for i := range v.blobs.n {
		if size := v.blobs.at(i).size; !v.blobs.referenced(i) && size != corruptBlob {
			v.warn(manifest.BlobsDir+"/"+v.blobs.hex(i), KindUnreferenced, "intact blob (%d bytes) referenced by neither the snapshot nor a journal attachment", size)
		}
	}
}

// checkSignature hands a present manifest.json.sig to opts.Signature.
func (v *verifier) checkSignature() {
	if _, ok := v.present[manifest.SignatureName]; !ok {
		return
	}
	if v.opts.Signature == nil {
		v.warn(manifest.SignatureName, KindUnchecked, "a signature is present but was not checked (no allowed signers given)")
		return
	}
	sig, err := readLimited(v.fsys, hostPath(v.dir, manifest.SignatureName), maxSignatureSize)
	if err != nil {
		v.problem(manifest.SignatureName, KindSignature, "%v", err)
		return
	}
	if v.mbytes == nil {
		v.problem(manifest.SignatureName, KindSignature, "cannot be checked without a manifest")
		return
	}
	if err := v.opts.Signature(v.mbytes, sig); err != nil {
		v.problem(manifest.SignatureName, KindSignature, "%v", err)
	}
}
