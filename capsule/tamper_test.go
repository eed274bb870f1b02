package capsule

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"pgregory.net/rapid"
)

// FORMAT §3: no byte change goes unnoticed. A property test: in a populated
// capsule, flip any byte of any file but the manifest, truncate it, or
// delete it, and Verify reports a problem naming that file. rapid prints
// the failing case and how to replay it (-rapid.seed).
func TestAnyTamperingIsReported(t *testing.T) {
	base := vfs.NewMem()
	c, err := Init(base, "/cap", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	populate(t, c)
	var files []string
	err = walkFiles(base, "/cap", "", func(rel string) {
		if rel != manifest.FileName {
			files = append(files, rel)
		}
	})
	if err != nil || len(files) != 8 {
		t.Fatalf("files %v, %v", files, err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		fsys := base.Clone()
		rel := rapid.SampledFrom(files).Draw(rt, "file")
		name := "/cap/" + rel
		b, err := vfs.ReadFile(fsys, name)
		if err != nil {
			rt.Fatal(err)
		}
		switch op := rapid.SampledFrom([]string{"flip", "truncate", "delete", "append"}).Draw(rt, "op"); {
		case op == "flip" && len(b) > 0:
			i := rapid.IntRange(0, len(b)-1).Draw(rt, "offset")
			b[i] ^= byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
		case op == "truncate" && len(b) > 0:
			b = b[:rapid.IntRange(0, len(b)-1).Draw(rt, "length")]
		case op == "append" && rel != manifest.JournalPath: // a journal tail is legal, checked by its own hook
			b = append(b, "x"...)
		default:
			if err := fsys.Remove(name); err != nil {
				rt.Fatal(err)
			}
			b = nil
		}
		if b != nil {
			if err := vfs.WriteFile(fsys, name, b, 0o644); err != nil {
				rt.Fatal(err)
			}
		}
		r, err := Verify(fsys, "/cap", VerifyOptions{})
		if err != nil {
			rt.Fatal(err)
		}
		for _, p := range r.Problems {
			if p.Path == rel {
				return
			}
		}
		rt.Fatalf("tampering with %s went unreported; problems: %v", rel, r.Problems)
	})
}

func walkFiles(fsys vfs.FS, root, rel string, fn func(string)) error {
	ents, err := fsys.ReadDir(hostPath(root, rel))
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		switch {
		case e.IsDir():
			if err := walkFiles(fsys, root, p, fn); err != nil {
				return err
			}
		case e.Type()&fs.ModeType == 0 && !strings.HasPrefix(e.Name(), "."):
			fn(p)
		}
	}
	return nil
}

// The pipelined hash (for files of 8 MiB and more) gives the digest of
// the plain one, at every size around its buffer boundaries, and reports
// read errors.
func TestHashPipelinedMatches(t *testing.T) {
	for _, n := range []int{0, 1, bufSize - 1, bufSize, bufSize + 1, 3*bufSize + 7, 5 * bufSize} {
		b := bytes.Repeat([]byte{byte(n)}, n)
		want := digest.FromBytes(b)
		got, size, err := hashPipelined(bytes.NewReader(b), nil)
		if err != nil || got != want || size != int64(n) {
			t.Errorf("size %d: got %s %d %v, want %s", n, got.Short(), size, err, want.Short())
		}
	}
	boom := errors.New("boom")
	if _, _, err := hashPipelined(io.MultiReader(bytes.NewReader(make([]byte, 3*bufSize)), iotest.ErrReader(boom)), nil); !errors.Is(err, boom) {
		t.Errorf("read error: got %v", err)
	}
}
