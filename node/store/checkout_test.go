package store_test

import (
	"bytes"
	"flag"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/node/store/storetest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

var deltaSeed = flag.Uint64("delta.seed", 0, "replay one seed of TestApplyDeltaIsACheckout and TestRecordWorkMatchesBuildSnapshot (0: a fresh one)")

func seedFor(t *testing.T) uint64 {
	s := *deltaSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d; replay: go test ./node/store -run '%s$' -delta.seed=%d", s, t.Name(), s)
	return s
}

// randomTree is a workspace as path -> content, for random tests: files
// (content, exec bit), empty directories and relative links.
type randomTree map[string]treeEntry

type treeEntry struct {
	kind   capsule.EntryType
	data   []byte
	exec   bool
	target string
}

var treeNames = []string{"a", "b", "c.txt", "d", "notes", "src", "x.go", "README.md"}

// mutate changes t a little: adds, rewrites (sometimes to the same size),
// removes files, flips exec bits, turns files into directories and back.
func (t randomTree) mutate(r *rand.Rand, links bool) {
	for range 1 + r.IntN(6) {
		p := randomPath(r)
		switch op := r.IntN(10); {
		case op < 4:
			t.put(p, treeEntry{kind: capsule.TypeFile, data: randomContent(r), exec: r.IntN(4) == 0})
		case op < 6:
			for q, e := range t {
				if e.kind == capsule.TypeFile && r.IntN(2) == 0 {
					e.data = bytes.Repeat([]byte{byte('a' + r.IntN(26))}, len(e.data)) // same size
					t[q] = e
				}
			}
		case op < 8:
			for q := range t {
				if strings.HasPrefix(q, p) {
					delete(t, q)
				}
			}
		case op < 9:
			t.put(p, treeEntry{kind: capsule.TypeDir})
		case links:
			t.put(p, treeEntry{kind: capsule.TypeSymlink, target: "../" + treeNames[r.IntN(len(treeNames))]})
		default:
			for q, e := range t {
				if e.kind == capsule.TypeFile {
					e.exec = !e.exec
					t[q] = e
					break
				}
			}
		}
	}
}

// put adds e at p, removing whatever would conflict with it.
func (t randomTree) put(p string, e treeEntry) {
	for q := range t {
		if q == p || strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
			delete(t, q)
		}
	}
	t[p] = e
}

func randomPath(r *rand.Rand) string {
	parts := make([]string, 1+r.IntN(3))
	for i := range parts {
		parts[i] = treeNames[r.IntN(len(treeNames))]
	}
	return path.Join(parts...)
}

func randomContent(r *rand.Rand) []byte {
	b := make([]byte, r.IntN(64))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return b
}

// write makes dir hold exactly t.
func (t randomTree) write(tb testing.TB, fsys vfs.FS, dir string) {
	tb.Helper()
	if err := fsys.RemoveAll(dir); err != nil {
		tb.Fatal(err)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, p := range slices.Sorted(maps.Keys(t)) {
		e, host := t[p], filepath.Join(dir, filepath.FromSlash(p))
		if err := fsys.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			tb.Fatal(err)
		}
		var err error
		switch e.kind {
		case capsule.TypeDir:
			err = fsys.MkdirAll(host, 0o755)
		case capsule.TypeSymlink:
			err = fsys.Symlink(e.target, host)
		default:
			perm := fs.FileMode(0o644)
			if e.exec {
				perm = 0o755
			}
			err = vfs.WriteFile(fsys, host, e.data, perm)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// TestApplyDeltaIsACheckout turns a checkout of one random snapshot into
// the next with applyDelta, many times over, and checks after each step
// that the tree is exactly what capsule.CheckoutSnapshot writes for the
// new snapshot: the shadow workspace a move's prepare starts from must be
// indistinguishable from a full checkout.
func TestApplyDeltaIsACheckout(t *testing.T) {
	r := rand.New(rand.NewPCG(seedFor(t), 1))
	for _, fsName := range []string{"os", "mem"} {
		t.Run(fsName, func(t *testing.T) {
			var fsys vfs.FS = vfs.OS{}
			root := t.TempDir()
			if fsName == "mem" {
				fsys, root = vfs.NewMem(), "/t"
			}
			bs := capsule.NewBlobStore(fsys, filepath.Join(root, "blobs"))
			ws, live, fresh := filepath.Join(root, "ws"), filepath.Join(root, "live"), filepath.Join(root, "fresh")
			tree, prev := randomTree{}, capsule.NewSnapshot()
			if err := fsys.MkdirAll(live, 0o755); err != nil {
				t.Fatal(err)
			}
			for step := range 40 {
				tree.mutate(r, true)
				tree.write(t, fsys, ws)
				snap, _, err := capsule.BuildSnapshot(ws, bs, capsule.SnapshotConfig{FS: fsys}, "")
				if err != nil {
					t.Fatal(err)
				}
				var b store.Batch
				if err := store.Checkout(fsys, store.Folder{Dir: bs.Dir()}, live, prev, snap, &b); err != nil {
					t.Fatalf("step %d: applyDelta: %v", step, err)
				}
				if err := b.Flush(fsys); err != nil {
					t.Fatalf("step %d: flush: %v", step, err)
				}
				_ = fsys.RemoveAll(fresh)
				if err := capsule.CheckoutSnapshot(snap, bs, fresh, capsule.CheckoutConfig{FS: fsys}); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(storetest.ListTree(t, fsys, fresh), storetest.ListTree(t, fsys, live)); diff != "" {
					t.Fatalf("step %d: delta-applied tree differs from a checkout (-checkout +delta):\n%s", step, diff)
				}
				prev = snap
			}
		})
	}
}

// TestApplyDeltaRefusesABadBlob feeds applyDelta a blob whose bytes do not
// hash to its name: the copy fails, it is never materialized.
func TestApplyDeltaRefusesABadBlob(t *testing.T) {
	fsys := vfs.NewMem()
	good := []byte("hello\n")
	d := digest.FromBytes(good)
	_ = fsys.MkdirAll("/blobs", 0o755)
	if err := vfs.WriteFile(fsys, "/blobs/"+d.Hex(), []byte("hellO\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := &capsule.Snapshot{Version: capsule.SnapshotVersion, Entries: []capsule.Entry{{Path: "f", Type: capsule.TypeFile, Size: 6, Blob: d}}}
	_ = fsys.MkdirAll("/w", 0o755)
	var b store.Batch
	err := store.Checkout(fsys, store.Folder{Dir: "/blobs"}, "/w", capsule.NewSnapshot(), snap, &b)
	if err == nil {
		t.Fatal("applyDelta copied a blob that does not match its digest")
	}
	if _, serr := fsys.Stat("/w/f"); serr == nil {
		t.Errorf("the bad copy was left in place (err %v)", err)
	}
}

// TestRecordWorkMatchesBuildSnapshot records a workspace that changes at
// random with the stat cache, and checks every record equals what
// capsule.BuildSnapshot records. On the OS the files' times are moved into
// the past so the cache is really used; a rewrite that keeps the size and
// restores the time must still be seen (the inode's change time moves).
func TestRecordWorkMatchesBuildSnapshot(t *testing.T) {
	r := rand.New(rand.NewPCG(seedFor(t), 2))
	for _, fsName := range []string{"os", "mem"} {
		t.Run(fsName, func(t *testing.T) {
			var fsys vfs.FS = vfs.OS{}
			root := t.TempDir()
			if fsName == "mem" {
				fsys, root = vfs.NewMem(), "/t"
			}
			ws := filepath.Join(root, "ws")
			bs := capsule.NewBlobStore(fsys, filepath.Join(root, "blobs"))
			var cache store.StatCache
			tree := randomTree{}
			old := time.Now().Add(-time.Hour)
			for step := range 40 {
				tree.mutate(r, false)
				if step%5 == 4 {
					tree[".capsuleignore"] = treeEntry{kind: capsule.TypeFile, data: []byte("*.txt\nsrc/\n")}
				}
				tree.write(t, fsys, ws)
				if fsName == "os" {
					backdate(t, ws, old)
				}
				want, _, err := capsule.BuildSnapshot(ws, bs, capsule.SnapshotConfig{FS: fsys}, "")
				if err != nil {
					t.Fatal(err)
				}
				for pass := range 2 { // the second pass may answer from the cache
					got, err := store.RecordWork(fsys, ws, &cache, time.Now)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want.Entries, got.Snap.Entries); diff != "" {
						t.Fatalf("step %d pass %d: recordWork differs from BuildSnapshot (-want +got):\n%s", step, pass, diff)
					}
				}
				if fsName == "os" {
					sameSizeRewrite(t, r, tree, ws, old)
					want, _, _ = capsule.BuildSnapshot(ws, bs, capsule.SnapshotConfig{FS: fsys}, "")
					got, err := store.RecordWork(fsys, ws, &cache, time.Now)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want.Entries, got.Snap.Entries); diff != "" {
						t.Fatalf("step %d: a same-size rewrite with its old time was missed (-want +got):\n%s", step, diff)
					}
				}
			}
			if fsName == "os" && cache.HitCount() == 0 {
				t.Error("the stat cache was never used")
			}
			if fsName == "mem" && cache.HitCount() != 0 {
				t.Errorf("the stat cache answered %d times on a file system without modification times", cache.HitCount())
			}
		})
	}
}

func backdate(t *testing.T, dir string, at time.Time) {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, at, at)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sameSizeRewrite rewrites one file in place with other bytes of the same
// length and puts its old modification time back.
func sameSizeRewrite(t *testing.T, r *rand.Rand, tree randomTree, ws string, at time.Time) {
	for _, p := range slices.Sorted(maps.Keys(tree)) {
		e := tree[p]
		if e.kind != capsule.TypeFile || len(e.data) == 0 || r.IntN(2) == 0 {
			continue
		}
		e.data = bytes.Repeat([]byte{e.data[0] ^ 1}, len(e.data))
		tree[p] = e
		host := filepath.Join(ws, filepath.FromSlash(p))
		f, err := os.OpenFile(host, os.O_WRONLY, 0)
		if err != nil {
			continue // ignored or under an ignored folder: absent is fine
		}
		_, err = f.WriteAt(e.data, 0)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(host, at, at); err != nil {
			t.Fatal(err)
		}
		return
	}
}
