package capsule

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// blobPerm is the mode of a blob file: blobs are written once and never
// changed (FORMAT §5.2).
const blobPerm fs.FileMode = 0o444

// BlobStore is a directory of content-addressed blobs: each file is named
// by the 64 hex digits of the sha256 of its content. Blobs are written
// durably (temporary file, fsync, rename, fsync of the directory), never
// overwritten, and verified on every read. A node may use a BlobStore of
// its own as its CAS store, outside any capsule.
type BlobStore struct {
	fsys vfs.FS
	dir  string
	lock *sync.RWMutex // a capsule's store shares its recovery lock; nil otherwise
}

// NewBlobStore returns the store in dir, which Put creates when missing.
func NewBlobStore(fsys vfs.FS, dir string) *BlobStore { return &BlobStore{fsys: fsys, dir: dir} }

// BlobInfo is a blob's digest and size.
type BlobInfo struct {
	Digest digest.Digest `json:"digest"`
	Size   int64         `json:"size"`
}

// Dir returns the store's directory.
func (s *BlobStore) Dir() string { return s.dir }

// Path returns the file that holds blob d.
func (s *BlobStore) Path(d digest.Digest) string { return filepath.Join(s.dir, d.Hex()) }

// Put stores the bytes of r and returns their digest and size. If the blob
// is already present it is kept as it is and the new copy discarded.
func (s *BlobStore) Put(r io.Reader) (digest.Digest, int64, error) {
	s.rlock()
	defer s.runlock()
	return s.put(r, "")
}

func (s *BlobStore) rlock() {
	if s.lock != nil {
		s.lock.RLock()
	}
}

func (s *BlobStore) runlock() {
	if s.lock != nil {
		s.lock.RUnlock()
	}
}

// PutExpect stores the bytes of r, which must hash to want: on a mismatch
// nothing is stored and the error is a *DigestError. If want is already
// present, r is not read and the stored size is returned. Use it for blobs
// received from elsewhere.
func (s *BlobStore) PutExpect(want digest.Digest, r io.Reader) (int64, error) {
	if err := want.Validate(); err != nil {
		return 0, fmt.Errorf("put blob: %w", err)
	}
	if n, err := s.Size(want); err == nil {
		return n, nil
	} else if !errors.Is(err, ErrMissingBlob) {
		return 0, err
	}
	s.rlock()
	defer s.runlock()
	_, n, err := s.put(r, want)
	return n, err
}

func (s *BlobStore) put(r io.Reader, want digest.Digest) (digest.Digest, int64, error) {
	if err := vfs.MkdirAllDurable(s.fsys, s.dir, 0o755); err != nil {
		return "", 0, fmt.Errorf("put blob: %w", err)
	}
	f, tmp, err := s.createTemp()
	if err != nil {
		return "", 0, fmt.Errorf("put blob: %w", err)
	}
	d, n, err := s.fill(f, r)
	if err == nil && want != "" && d != want {
		err = &DigestError{Path: "blob " + want.Hex(), Want: want, Got: d}
	}
	if err == nil {
		err = s.install(tmp, d)
	}
	if err != nil {
		_ = s.fsys.Remove(tmp)
		return "", n, fmt.Errorf("put blob: %w", err)
	}
	return d, n, nil
}

// createTemp creates a temporary file in the store with a random name, so
// concurrent writers and earlier crashes never collide.
func (s *BlobStore) createTemp() (vfs.File, string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	tmp := filepath.Join(s.dir, vfs.TempPrefix+"blob-"+hex.EncodeToString(b[:]))
	f, err := s.fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, blobPerm)
	return f, tmp, err
}

// fill copies r into f while hashing, then syncs and closes f.
func (s *BlobStore) fill(f vfs.File, r io.Reader) (digest.Digest, int64, error) {
	h := digest.NewHasher()
	buf := getBuf()
	defer putBuf(buf)
	n, err := io.CopyBuffer(io.MultiWriter(f, h), r, *buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return h.Digest(), n, err
}

// install renames the synced tmp to the blob's name unless the blob is
// already there, and syncs the folder.
func (s *BlobStore) install(tmp string, d digest.Digest) error {
	if err := s.installNoSync(tmp, d); err != nil {
		return err
	}
	return s.fsys.SyncDir(s.dir)
}

// installNoSync is install without the sync of the folder, for a batch
// that syncs it once for all its blobs. When the blob is already there
// tmp is removed instead: an existing blob is never overwritten.
func (s *BlobStore) installNoSync(tmp string, d digest.Digest) error {
	final := s.Path(d)
	if _, err := s.fsys.Lstat(final); err == nil {
		return s.fsys.Remove(tmp)
	}
	return s.fsys.Rename(tmp, final)
}

// Open opens blob d for reading. The reader hashes as it goes and, instead
// of io.EOF, returns a *DigestError if the bytes do not hash to d.
func (s *BlobStore) Open(d digest.Digest) (io.ReadCloser, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("open blob: %w", err)
	}
	f, err := s.fsys.Open(s.Path(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrMissingBlob, d)
	}
	if err != nil {
		return nil, fmt.Errorf("open blob: %w", err)
	}
	return &verifyingReader{f: f, h: digest.NewHasher(), want: d, name: "blob " + d.Hex()}, nil
}

// NewVerifyingReader wraps r so that at its end it returns a *DigestError,
// instead of io.EOF, if the bytes read do not hash to want. name labels
// the error.
func NewVerifyingReader(r io.Reader, want digest.Digest, name string) io.Reader {
	return &verifyingReader{f: r, h: digest.NewHasher(), want: want, name: name}
}

type verifyingReader struct {
	f    io.Reader
	h    *digest.Hasher
	want digest.Digest
	name string
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.f.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		if got := v.h.Digest(); got != v.want {
			return n, &DigestError{Path: v.name, Want: v.want, Got: got}
		}
	}
	return n, err
}

func (v *verifyingReader) Close() error {
	if c, ok := v.f.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Has reports whether blob d is present.
func (s *BlobStore) Has(d digest.Digest) (bool, error) {
	_, err := s.Size(d)
	if errors.Is(err, ErrMissingBlob) {
		return false, nil
	}
	return err == nil, err
}

// Size returns the size of blob d, or an error wrapping ErrMissingBlob.
func (s *BlobStore) Size(d digest.Digest) (int64, error) {
	fi, err := s.fsys.Lstat(s.Path(d))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%w: %s", ErrMissingBlob, d)
	}
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, d)
	}
	return fi.Size(), nil
}

// List returns every blob in the store, sorted by digest, without reading
// them. Files that are not blobs (temporary files, other names) are skipped.
func (s *BlobStore) List() ([]BlobInfo, error) {
	ents, err := s.fsys.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	var out []BlobInfo
	for _, e := range ents {
		if !digest.IsHex(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("list blobs: %w", err)
		}
		out = append(out, BlobInfo{Digest: digest.Digest(digest.Algorithm + ":" + e.Name()), Size: fi.Size()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Digest < out[j].Digest })
	return out, nil
}

// Remove deletes blob d durably. Removing a missing blob is no error.
func (s *BlobStore) Remove(d digest.Digest) error {
	if err := s.fsys.Remove(s.Path(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove blob: %w", err)
	}
	return s.fsys.SyncDir(s.dir)
}
