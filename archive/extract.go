package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/dirlist"
	"github.com/agentcapsule/capsule/vfs"
)

// extractor unpacks one tar stream into a fresh directory, enforcing
// FORMAT §9. In collect mode (Verify) it records a refused entry as a
// Problem and goes on with the next; otherwise the first refusal stops it.
// Limits and a corrupt stream always stop it.
type extractor struct {
	fsys     vfs.FS
	root     string
	lim      Limits
	collect  bool
	progress Progress

	// names holds every folded name claimed but the blobs' (FORMAT §1
	// allows a handful). A blob is claimed under its own name, which is its
	// folded name, and its file is created (or queued on w) before the next
	// entry is read, so the staging folder itself remembers the blobs:
	// lastBlob is the greatest blob name claimed, and only a blob name not
	// after it (an archive out of FORMAT §8.1's order) needs a look at the
	// folder, once w has written what it holds.
	names    map[string]nameInfo
	lastBlob string
	dirs     []string // directories created, in creation order
	problems []Problem
	// hashBlobs makes writeFile hash every blob as it writes it;
	// badBlobs counts those whose content is not what their name says.
	hashBlobs bool
	badBlobs  int
	entries   int   // headers seen
	files     int   // regular files written
	total     int64 // bytes charged against lim.MaxTotal
	buf       []byte
	w         *fileWriter // writes the small files while run reads on
}

type nameInfo struct {
	name     string
	isDir    bool
	explicit bool // a directory entry named it (not only a file below it)
}

// newExtractor returns an extractor into root. Import makes every file
// durable in one batch once the archive is accepted (syncAll); Verify,
// whose folder is thrown away, does not call it.
func newExtractor(fsys vfs.FS, root string, lim Limits, collect bool, p Progress) *extractor {
	return &extractor{
		fsys: fsys, root: root, lim: lim, collect: collect, progress: p,
		names: map[string]nameInfo{},
		buf:   make([]byte, copyBufSize),
	}
}

// run reads every entry of the tar stream r. It returns a fatal error (an
// *EntryError, or ErrLimit / ErrCorrupt for the stream, or an I/O error);
// refused entries in collect mode end up in x.problems. Nothing is synced
// yet: a refused archive costs no fsync.
//
// Small files are written on a goroutine of their own (fileWriter); run
// returns once every file is written, and a failure to write one comes
// before any error of a later entry.
func (x *extractor) run(r *eofReader) error {
	x.w = newFileWriter(x.fsys)
	err := x.readAll(r)
	if werr := x.w.close(); werr != nil {
		err = werr
	}
	x.w = nil
	return err
}

// readAll reads every entry of the tar stream r.
func (x *extractor) readAll(r *eofReader) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if r.sawEOF && x.entries == 0 {
				return fmt.Errorf("%w: the stream holds no entries and no end-of-archive marker", ErrCorrupt)
			}
			if r.sawEOF {
				return fmt.Errorf("%w: the stream ends without the end-of-archive marker after %d entries", ErrCorrupt, x.entries)
			}
			return nil
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return streamError(err, x.entries)
		}
		x.entries++
		if x.entries > x.lim.MaxEntries {
			return x.refuse(hdr, ErrLimit, fmt.Sprintf("more than %d entries", x.lim.MaxEntries))
		}
		if err := x.entry(tr, hdr); err != nil {
			if !x.collect || !collectable(err) {
				return err
			}
			x.problems = append(x.problems, entryProblem(err))
		}
	}
}

// entry checks and writes one entry.
func (x *extractor) entry(tr *tar.Reader, hdr *tar.Header) error {
	if detail := typeProblem(hdr); detail != "" {
		return x.charge(hdr, x.refuse(hdr, ErrEntryType, detail))
	}
	if err := x.checkSize(hdr); err != nil {
		return err
	}
	isDir := hdr.Typeflag == tar.TypeDir
	name, err := cleanName(hdr.Name, isDir, x.lim.MaxPathLen)
	if err != nil {
		return x.refuseRule(hdr, err)
	}
	if name == "" { // the root itself ("./")
		return nil
	}
	have, err := x.claim(name, isDir)
	var ie ioError
	switch {
	case errors.As(err, &ie):
		return err
	case err != nil:
		return x.refuseRule(hdr, err)
	case isDir && !have:
		return x.makeDir(name)
	case isDir:
		return nil
	}
	return x.writeFile(tr, hdr, name)
}

// typeProblem says why hdr is not a plain file or directory, or "".
func typeProblem(hdr *tar.Header) string {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return fmt.Sprintf("sparse file (claims %d bytes)", hdr.Size)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
		return ""
	case tar.TypeGNUSparse:
		return fmt.Sprintf("sparse file (claims %d bytes)", hdr.Size)
	case tar.TypeSymlink:
		return fmt.Sprintf("symbolic link to %q", clip(hdr.Linkname))
	case tar.TypeLink:
		return fmt.Sprintf("hard link to %q", clip(hdr.Linkname))
	case tar.TypeChar, tar.TypeBlock:
		return "device node"
	case tar.TypeFifo:
		return "fifo"
	case tar.TypeXGlobalHeader:
		return "PAX global header"
	default:
		return fmt.Sprintf("type %q", hdr.Typeflag)
	}
}

// checkSize refuses an entry over the per-entry or total limit before a
// byte of it is read.
func (x *extractor) checkSize(hdr *tar.Header) error {
	if hdr.Size > x.lim.MaxEntrySize {
		return x.refuse(hdr, ErrLimit, fmt.Sprintf("entry is %d bytes, limit %d", hdr.Size, x.lim.MaxEntrySize))
	}
	if hdr.Size > x.lim.MaxTotal-x.total {
		return x.refuse(hdr, ErrLimit, fmt.Sprintf("entries total more than %d bytes", x.lim.MaxTotal))
	}
	x.total += hdr.Size
	return nil
}

// charge counts the data a refused entry's skipping will read against the
// total, so skipping in collect mode cannot be a bomb; it returns refusal,
// or a fatal limit error.
func (x *extractor) charge(hdr *tar.Header, refusal error) error {
	if x.collect && hdr.Size > x.lim.MaxTotal-x.total {
		return x.refuse(hdr, ErrLimit, fmt.Sprintf("entries total more than %d bytes", x.lim.MaxTotal))
	}
	x.total += hdr.Size
	return refusal
}

// refuse builds the error naming hdr.
func (x *extractor) refuse(hdr *tar.Header, sentinel error, detail string) error {
	return &EntryError{Index: x.entries - 1, Name: hdr.Name, Err: sentinel, Detail: detail}
}

// refuseRule is refuse for a broken rule from cleanName or claim.
func (x *extractor) refuseRule(hdr *tar.Header, err error) error {
	var re *ruleError
	if errors.As(err, &re) {
		return x.refuse(hdr, re.err, re.detail)
	}
	return err
}

// claim checks name against what the archive already holds, refusing
// duplicates, case collisions and a file standing where a directory must be,
// and against the layout (FORMAT §1), so that a name the layout does not
// allow is refused from its header; then it creates the missing parent
// directories and records name. It changes nothing on refusal. have is true
// for a directory already created as the parent of an earlier entry.
func (x *extractor) claim(name string, isDir bool) (have bool, err error) {
	have, missing, err := x.check(name, isDir)
	if err != nil {
		return false, err
	}
	if detail := layoutProblem(name, isDir); detail != "" && !have {
		return false, rule(ErrLayout, detail)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := x.makeDir(missing[i]); err != nil {
			return false, err
		}
		x.names[foldName(missing[i])] = nameInfo{name: missing[i], isDir: true}
	}
	x.record(name, isDir)
	return have, nil
}

// record remembers the claimed name.
func (x *extractor) record(name string, isDir bool) {
	if !isDir && isBlobName(name) {
		x.lastBlob = max(x.lastBlob, name)
		return
	}
	x.names[foldName(name)] = nameInfo{name: name, isDir: isDir, explicit: isDir}
}

// seen returns what was claimed under the folded name f.
func (x *extractor) seen(f string) (nameInfo, bool) {
	if !isBlobName(f) {
		info, ok := x.names[f]
		return info, ok
	}
	if f > x.lastBlob {
		return nameInfo{}, false
	}
	if x.w != nil {
		_ = x.w.wait() // a failure is reported by the next writeFile or by run
	}
	if _, err := x.fsys.Lstat(x.path(f)); err != nil {
		return nameInfo{}, false // not claimed (or unreadable: creating it then fails)
	}
	return nameInfo{name: f}, true
}

// check is claim's part that changes nothing: it returns the parents of
// name still to create, deepest first.
func (x *extractor) check(name string, isDir bool) (have bool, missing []string, err error) {
	if info, ok := x.seen(foldName(name)); ok {
		switch {
		case info.name != name:
			return false, nil, rule(ErrCaseCollision, fmt.Sprintf("%q is already in the archive", info.name))
		case isDir && info.isDir && !info.explicit:
			return true, nil, nil
		default:
			return false, nil, rule(ErrDuplicate, fmt.Sprintf("%q appears twice", name))
		}
	}
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		info, ok := x.names[foldName(p)]
		switch {
		case !ok:
			missing = append(missing, p)
		case info.name != p:
			return false, nil, rule(ErrCaseCollision, fmt.Sprintf("parent %q collides with %q", p, info.name))
		case !info.isDir:
			return false, nil, rule(ErrConflict, fmt.Sprintf("parent %q is a file", p))
		}
	}
	return false, missing, nil
}

// ioError marks a failure of the file system, which no archive content
// excuses and collect mode never skips.
type ioError struct{ err error }

func (e ioError) Error() string { return e.err.Error() }
func (e ioError) Unwrap() error { return e.err }

func (x *extractor) makeDir(name string) error {
	if err := x.fsys.Mkdir(x.path(name), DirMode); err != nil {
		return ioError{fmt.Errorf("mkdir %s: %w", name, err)}
	}
	x.dirs = append(x.dirs, name)
	return nil
}

func (x *extractor) path(name string) string {
	return filepath.Join(x.root, filepath.FromSlash(name))
}

// writeFile copies exactly hdr.Size bytes into a new file and closes it,
// or, for a small file, reads them and queues the file on x.w.
func (x *extractor) writeFile(tr *tar.Reader, hdr *tar.Header, name string) error {
	if x.w != nil {
		if err := x.w.failed(); err != nil {
			return err
		}
		if hdr.Size <= smallFile {
			return x.queueFile(tr, hdr, name)
		}
	}
	f, err := x.fsys.OpenFile(x.path(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return ioError{fmt.Errorf("create %s: %w", name, err)}
	}
	var dst io.Writer = struct{ io.Writer }{f} // hide ReadFrom so our buffer is used
	var h *digest.Hasher
	if x.hashBlobs && isBlobName(name) {
		h = digest.NewHasher()
		dst = io.MultiWriter(dst, h)
	}
	if x.progress != nil {
		dst = progressWriter{dst, x.progress}
	}
	n, err := io.CopyBuffer(dst, tr, x.buf)
	if err == nil && n != hdr.Size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		f.Close()
		if isStreamError(err) {
			return streamError(err, x.entries-1)
		}
		return ioError{fmt.Errorf("write %s: %w", name, err)}
	}
	x.files++
	if h != nil && h.Digest().Hex() != path.Base(name) {
		x.badBlobs++
	}
	if err := f.Close(); err != nil {
		return ioError{fmt.Errorf("close %s: %w", name, err)}
	}
	return nil
}

// queueFile reads the hdr.Size bytes of a small file, hashes a blob's,
// and hands the file to x.w to create.
func (x *extractor) queueFile(tr *tar.Reader, hdr *tar.Header, name string) error {
	buf := x.w.buffer()
	*buf = (*buf)[:hdr.Size]
	n, err := io.ReadFull(tr, *buf)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // some bytes were due
	}
	if err != nil {
		if isStreamError(err) {
			return streamError(err, x.entries-1)
		}
		return ioError{fmt.Errorf("write %s: %w", name, err)}
	}
	if x.progress != nil && n > 0 {
		x.progress.Add(int64(n))
	}
	x.files++
	if x.hashBlobs && isBlobName(name) && digest.FromBytes(*buf).Hex() != path.Base(name) {
		x.badBlobs++
	}
	x.w.write(x.path(name), name, buf)
	return nil
}

// syncAll makes every file written durable, in one batch (syncFiles), then
// every directory's entries, the root last.
func (x *extractor) syncAll() error {
	if err := x.syncFiles(); err != nil {
		return err
	}
	return x.syncDirs()
}

// syncFiles makes the contents of every file written durable: with one
// syncfs of the staging folder's file system where the FS offers it (the
// real file system on Linux), else with an fsync of each file of the
// staging folder, several at a time.
func (x *extractor) syncFiles() error {
	if x.files == 0 {
		return nil
	}
	if ok, err := syncFS(x.fsys, x.root); ok {
		if err != nil {
			return ioError{fmt.Errorf("sync %s: %w", x.root, err)}
		}
		return nil
	}
	pool := newSyncPool()
	for _, d := range append([]string{""}, x.dirs...) {
		err := dirlist.Each(x.fsys, x.path(d), func(e fs.DirEntry) error {
			if !e.Type().IsRegular() {
				return nil
			}
			name := path.Join(d, e.Name())
			f, err := x.fsys.Open(x.path(name))
			if err != nil {
				return ioError{fmt.Errorf("sync %s: %w", name, err)}
			}
			pool.add(f, name)
			return nil
		})
		if err != nil {
			pool.fail(ioError{fmt.Errorf("sync %s: %w", d, err)})
			break
		}
	}
	return pool.wait()
}

// syncDirs makes every directory's entries durable, the root last.
func (x *extractor) syncDirs() error {
	for i := len(x.dirs) - 1; i >= 0; i-- {
		if err := x.fsys.SyncDir(x.path(x.dirs[i])); err != nil {
			return fmt.Errorf("sync %s: %w", x.dirs[i], err)
		}
	}
	if err := x.fsys.SyncDir(x.root); err != nil {
		return fmt.Errorf("sync %s: %w", x.root, err)
	}
	return nil
}

// isStreamError reports whether err came from reading the archive (its
// decompressor, its limits, or a cut) rather than from the file system.
func isStreamError(err error) bool {
	var ie ioError
	if errors.As(err, &ie) {
		return false
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrHeader) ||
		errors.Is(err, ErrLimit) || errors.Is(err, ErrCorrupt) || isZstdError(err)
}

func isZstdError(err error) bool {
	for _, z := range []error{zstd.ErrReservedBlockType, zstd.ErrCompressedSizeTooBig, zstd.ErrBlockTooSmall,
		zstd.ErrUnexpectedBlockSize, zstd.ErrMagicMismatch, zstd.ErrWindowSizeExceeded, zstd.ErrWindowSizeTooSmall,
		zstd.ErrDecoderSizeExceeded, zstd.ErrUnknownDictionary, zstd.ErrFrameSizeExceeded, zstd.ErrFrameSizeMismatch,
		zstd.ErrCRCMismatch, zstd.ErrDecoderClosed, zstd.ErrEncoderClosed} {
		if errors.Is(err, z) {
			return true
		}
	}
	return false
}

// streamError classifies an error of the stream as ErrLimit or ErrCorrupt;
// complete is the number of entries read whole before it.
func streamError(err error, complete int) error {
	switch {
	case errors.Is(err, ErrLimit):
		return err
	case errors.Is(err, zstd.ErrWindowSizeExceeded), errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrFrameSizeExceeded):
		return fmt.Errorf("%w: zstd: %v", ErrLimit, err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the stream ends early, after %d complete entries", ErrCorrupt, complete)
	default:
		return fmt.Errorf("%w: after %d complete entries: %v", ErrCorrupt, complete, err)
	}
}

// collectable reports whether collect mode may record err and go on: true
// for a refused entry, false for a limit, a corrupt stream or an I/O failure.
func collectable(err error) bool {
	var ee *EntryError
	return errors.As(err, &ee) && !errors.Is(err, ErrLimit)
}

// entryProblem turns a refused entry, or a fatal stream error, into a Problem.
func entryProblem(err error) Problem {
	var ee *EntryError
	if errors.As(err, &ee) {
		return Problem{Path: ee.Name, Kind: KindArchive, Detail: fmt.Sprintf("entry %d: %s: %s", ee.Index, strings.TrimPrefix(ee.Err.Error(), "archive: "), ee.Detail)}
	}
	return Problem{Kind: KindArchive, Detail: strings.TrimPrefix(err.Error(), "archive: ")}
}
