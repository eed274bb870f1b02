//go:build unix

package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/agentcapsule/capsule/vfs"
)

// The names the differential test works on: a small set, so operations
// collide often. Symbolic link targets are relative, as absolute ones would
// mean different things in Mem and in a temporary directory.
var (
	diffNames   = []string{"a", "b", "d", "d/a", "d/e", "d/e/f", "e", "l", "d/l", "a/x", "d/"}
	diffTargets = []string{"a", "d", "../a", "../d/e", "e/f", "l", "nope", "d/a"}
	diffModes   = []fs.FileMode{0o600, 0o644, 0o700, 0o755}
	diffFlags   = []int{
		os.O_RDONLY, os.O_WRONLY, os.O_RDWR,
		os.O_WRONLY | os.O_CREATE, os.O_WRONLY | os.O_CREATE | os.O_EXCL,
		os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_RDWR | os.O_APPEND, os.O_WRONLY | os.O_TRUNC,
	}
)

// TestMemMatchesOS runs random sequences of operations on a Mem and on the
// host file system side by side and checks that every operation has the
// same outcome (the same errno) and both trees end up alike. rapid prints
// the failing sequence and the flag that replays it
// (go test ./vfs -run TestMemMatchesOS -rapid.seed=N).
func TestMemMatchesOS(t *testing.T) {
	old := syscall.Umask(0o022) // Mem applies no umask; make the host's predictable
	defer syscall.Umask(old)
	base := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp(base, "run")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		// Both work one level below an empty directory, so a link target
		// like "../a" leaves the test tree alike on both.
		mem := vfs.NewMem()
		if err := mem.Mkdir("/r", 0o755); err != nil {
			rt.Fatal(err)
		}
		osRoot := filepath.Join(dir, "r")
		if err := os.Mkdir(osRoot, 0o755); err != nil {
			rt.Fatal(err)
		}
		d := &differ{rt: rt, mem: mem, osRoot: osRoot}
		rt.Repeat(d.actions())
	})
}

type differ struct {
	rt     *rapid.T
	mem    *vfs.Mem
	osRoot string
}

// both runs op on Mem (under "/r") and on the OS (under osRoot) and compares
// the outcomes.
func (d *differ) both(what string, op func(fsys vfs.FS, p func(string) string) (string, error)) {
	memOut, memErr := op(d.mem, func(n string) string { return "/r/" + n })
	osOut, osErr := op(vfs.OS{}, func(n string) string {
		if n == "d/" {
			return filepath.Join(d.osRoot, n) + "/"
		}
		return filepath.Join(d.osRoot, n)
	})
	if got, want := errKind(memErr), errKind(osErr); got != want {
		d.rt.Fatalf("%s: Mem error %v, OS error %v", what, memErr, osErr)
	}
	if memOut != osOut {
		d.rt.Fatalf("%s: Mem gave %q, OS gave %q", what, memOut, osOut)
	}
}

// errKind names the errno an error wraps, or "ok".
func errKind(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "other: " + err.Error()
}

func (d *differ) name(label string) string {
	return rapid.SampledFrom(diffNames).Draw(d.rt, label)
}

func (d *differ) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"open":      d.open,
		"mkdir":     d.simple("mkdir", func(f vfs.FS, p string) error { return f.Mkdir(p, 0o755) }),
		"mkdirall":  d.simple("mkdirall", func(f vfs.FS, p string) error { return f.MkdirAll(p, 0o755) }),
		"remove":    d.simple("remove", func(f vfs.FS, p string) error { return f.Remove(p) }),
		"removeall": d.simple("removeall", func(f vfs.FS, p string) error { return f.RemoveAll(p) }),
		"syncdir":   d.simple("syncdir", func(f vfs.FS, p string) error { return f.SyncDir(p) }),
		"rename":    d.rename,
		"symlink":   d.symlink,
		"chmod":     d.chmod,
		"stat":      d.stat,
		"readdir":   d.readDir,
		"readlink":  d.readlink,
		"":          d.compareTrees,
	}
}

func (d *differ) simple(op string, fn func(fsys vfs.FS, p string) error) func(*rapid.T) {
	return func(*rapid.T) {
		n := d.name("name")
		d.both(op+" "+n, func(fsys vfs.FS, p func(string) string) (string, error) { return "", fn(fsys, p(n)) })
	}
}

// open opens a name with random flags, writes or reads, and maybe truncates.
func (d *differ) open(rt *rapid.T) {
	n := d.name("name")
	flag := rapid.SampledFrom(diffFlags).Draw(rt, "flag")
	data := rapid.StringMatching(`[a-z]{0,6}`).Draw(rt, "data")
	trunc := rapid.IntRange(-1, 8).Draw(rt, "truncate")
	d.both(fmt.Sprintf("open %s %#x write %q truncate %d", n, flag, data, trunc), func(fsys vfs.FS, p func(string) string) (string, error) {
		f, err := fsys.OpenFile(p(n), flag, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
			b, err := io.ReadAll(f)
			return string(b), err
		}
		if _, err := f.Write([]byte(data)); err != nil {
			return "", err
		}
		if trunc >= 0 {
			return "", f.Truncate(int64(trunc))
		}
		return "", nil
	})
}

func (d *differ) rename(rt *rapid.T) {
	from, to := d.name("from"), d.name("to")
	d.both("rename "+from+" "+to, func(fsys vfs.FS, p func(string) string) (string, error) {
		return "", fsys.Rename(p(from), p(to))
	})
}

func (d *differ) symlink(rt *rapid.T) {
	target, n := rapid.SampledFrom(diffTargets).Draw(rt, "target"), d.name("name")
	d.both("symlink "+target+" "+n, func(fsys vfs.FS, p func(string) string) (string, error) {
		return "", fsys.Symlink(target, p(n))
	})
}

func (d *differ) chmod(rt *rapid.T) {
	n, mode := d.name("name"), rapid.SampledFrom(diffModes).Draw(rt, "mode")
	d.both(fmt.Sprintf("chmod %s %v", n, mode), func(fsys vfs.FS, p func(string) string) (string, error) {
		return "", fsys.Chmod(p(n), mode)
	})
}

func (d *differ) stat(rt *rapid.T) {
	n, follow := d.name("name"), rapid.Bool().Draw(rt, "follow")
	d.both(fmt.Sprintf("stat %s follow=%v", n, follow), func(fsys vfs.FS, p func(string) string) (string, error) {
		stat := fsys.Lstat
		if follow {
			stat = fsys.Stat
		}
		fi, err := stat(p(n))
		if err != nil {
			return "", err
		}
		return describe(fi), nil
	})
}

func (d *differ) readDir(rt *rapid.T) {
	n := d.name("name")
	d.both("readdir "+n, func(fsys vfs.FS, p func(string) string) (string, error) {
		ents, err := fsys.ReadDir(p(n))
		out := ""
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				return "", err
			}
			out += e.Name() + "=" + describe(fi) + " "
		}
		return out, err
	})
}

func (d *differ) readlink(rt *rapid.T) {
	n := d.name("name")
	d.both("readlink "+n, func(fsys vfs.FS, p func(string) string) (string, error) {
		return fsys.Readlink(p(n))
	})
}

// describe renders what both file systems must agree on: type, permission
// bits, and the size of files and links (directory sizes differ).
func describe(fi fs.FileInfo) string {
	if fi.IsDir() {
		return fi.Mode().String()
	}
	return fmt.Sprintf("%v/%d", fi.Mode(), fi.Size())
}

// compareTrees checks that both trees hold the same names, types, modes and
// contents.
func (d *differ) compareTrees(*rapid.T) {
	memTree, osTree := walkTree(d.rt, d.mem, "/r"), walkTree(d.rt, vfs.OS{}, d.osRoot)
	if diff := cmp.Diff(osTree, memTree); diff != "" {
		d.rt.Fatalf("trees differ (-os +mem):\n%s", diff)
	}
}

func walkTree(rt *rapid.T, fsys vfs.FS, root string) map[string]string {
	out := map[string]string{}
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			rt.Fatalf("walk %s: %v", dir, err)
		}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				rt.Fatal(err)
			}
			name, key := filepath.Join(dir, e.Name()), filepath.Join(rel, e.Name())
			out[key] = describe(fi)
			switch {
			case fi.IsDir():
				walk(name, key)
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := fsys.Readlink(name)
				if err != nil {
					rt.Fatal(err)
				}
				out[key] += " -> " + target
			default:
				b, err := vfs.ReadFile(fsys, name)
				if err != nil {
					rt.Fatal(err)
				}
				out[key] += " " + string(b)
			}
		}
	}
	walk(root, "")
	return out
}
