package vfstest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
)

func testWriteRead(t *testing.T, e env) {
	f := e.open("f", os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if got, want := f.Name(), e.p("f"); got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	n, err := f.Write([]byte("hello, world"))
	wantNoErr(t, "Write", err)
	if n != 12 {
		t.Errorf("Write n = %d, want 12", n)
	}
	wantNoErr(t, "Sync", f.Sync())
	fi, err := f.Stat()
	wantNoErr(t, "File.Stat", err)
	if fi.Size() != 12 || fi.Name() != "f" || !fi.Mode().IsRegular() {
		t.Errorf("File.Stat = %s %d %v, want f 12 regular", fi.Name(), fi.Size(), fi.Mode())
	}
	wantNoErr(t, "Close", f.Close())
	if got := e.read("f"); got != "hello, world" {
		t.Errorf("read back %q", got)
	}
	g, err := e.fsys.Open(e.p("f"))
	wantNoErr(t, "Open", err)
	defer g.Close()
	buf := make([]byte, 5)
	if n, err := g.Read(buf); n != 5 || err != nil || string(buf) != "hello" {
		t.Errorf("Read = %d %v %q, want 5 nil hello", n, err, buf)
	}
	if got := readAll(t, g); got != ", world" {
		t.Errorf("rest = %q", got)
	}
	if n, err := g.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("Read at end = %d %v, want 0 EOF", n, err)
	}
	if n, err := g.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) at end = %d %v, want 0 nil", n, err)
	}
}

func testOpenFlags(t *testing.T, e env) {
	e.write("f", "0123456789")
	tests := []struct {
		name  string
		flag  int
		write string
		want  string
	}{
		{"overwrite prefix", os.O_WRONLY, "ab", "ab23456789"},
		{"truncate", os.O_WRONLY | os.O_TRUNC, "ab", "ab"},
		{"append", os.O_WRONLY | os.O_APPEND, "ab", "0123456789ab"},
		{"rdwr append", os.O_RDWR | os.O_APPEND, "ab", "0123456789ab"},
		{"create existing", os.O_WRONLY | os.O_CREATE, "ab", "ab23456789"},
		{"create truncate", os.O_WRONLY | os.O_CREATE | os.O_TRUNC, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.write("f", "0123456789")
			f := e.open("f", tc.flag)
			_, err := f.Write([]byte(tc.write))
			wantNoErr(t, "Write", err)
			wantNoErr(t, "Close", f.Close())
			if got := e.read("f"); got != tc.want {
				t.Errorf("contents = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("append ignores seek", func(t *testing.T) {
		e.write("f", "abc")
		f := e.open("f", os.O_RDWR|os.O_APPEND)
		_, err := f.Seek(0, io.SeekStart)
		wantNoErr(t, "Seek", err)
		_, err = f.Write([]byte("d"))
		wantNoErr(t, "Write", err)
		if got := e.read("f"); got != "abcd" {
			t.Errorf("contents = %q, want abcd", got)
		}
	})
	t.Run("read only", func(t *testing.T) {
		f := e.open("f", os.O_RDONLY)
		_, err := f.Write([]byte("x"))
		wantErr(t, "Write on O_RDONLY", err, errBadFD)
	})
	t.Run("write only", func(t *testing.T) {
		f := e.open("f", os.O_WRONLY)
		_, err := f.Read(make([]byte, 1))
		wantErr(t, "Read on O_WRONLY", err, errBadFD)
	})
}

func testOpenErrors(t *testing.T, e env) {
	e.write("f", "x")
	e.mkdir("d")
	tests := []struct {
		name string
		path string
		flag int
		want error
	}{
		{"missing", "nope", os.O_RDONLY, fs.ErrNotExist},
		{"missing parent", "nope/f", os.O_WRONLY | os.O_CREATE, fs.ErrNotExist},
		{"file as parent", "f/x", os.O_RDONLY, errNotDir},
		{"create file under file", "f/x", os.O_WRONLY | os.O_CREATE, errNotDir},
		{"exclusive existing", "f", os.O_WRONLY | os.O_CREATE | os.O_EXCL, fs.ErrExist},
		{"exclusive existing dir", "d", os.O_WRONLY | os.O_CREATE | os.O_EXCL, fs.ErrExist},
		{"dir for writing", "d", os.O_WRONLY, errIsDir},
		{"dir for read-write", "d", os.O_RDWR, errIsDir},
		{"trailing slash on file", "f/", os.O_RDONLY, errNotDir},
	}
	for _, tc := range tests {
		_, err := e.fsys.OpenFile(e.p(tc.path), tc.flag, 0o644)
		wantErr(t, fmt.Sprintf("%s: OpenFile(%s)", tc.name, tc.path), err, tc.want)
	}
	if _, err := e.fsys.OpenFile("", os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenFile(\"\") = %v, want ErrNotExist", err)
	}
	t.Run("directory read", func(t *testing.T) {
		d, err := e.fsys.Open(e.p("d"))
		wantNoErr(t, "Open(dir)", err)
		defer d.Close()
		fi, err := d.Stat()
		wantNoErr(t, "Stat", err)
		if !fi.IsDir() {
			t.Errorf("Stat of opened dir: IsDir false")
		}
		_, err = d.Read(make([]byte, 4))
		wantErr(t, "Read(dir)", err, errIsDir)
		wantNoErr(t, "Sync(dir)", d.Sync())
	})
}

func testReadAtSeek(t *testing.T, e env) {
	e.write("f", "0123456789")
	f := e.open("f", os.O_RDWR)
	buf := make([]byte, 4)
	if n, err := f.ReadAt(buf, 3); n != 4 || err != nil || string(buf) != "3456" {
		t.Errorf("ReadAt(3) = %d %v %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 8); n != 2 || err != io.EOF || string(buf[:n]) != "89" {
		t.Errorf("ReadAt(8) = %d %v %q, want 2 EOF 89", n, err, buf[:n])
	}
	if n, err := f.ReadAt(buf, 20); n != 0 || err != io.EOF {
		t.Errorf("ReadAt(20) = %d %v, want 0 EOF", n, err)
	}
	if _, err := f.ReadAt(buf, -1); err == nil {
		t.Errorf("ReadAt(-1): no error")
	}
	seeks := []struct {
		off    int64
		whence int
		want   int64
	}{{2, io.SeekStart, 2}, {3, io.SeekCurrent, 5}, {-1, io.SeekEnd, 9}, {0, io.SeekCurrent, 9}}
	for _, s := range seeks {
		got, err := f.Seek(s.off, s.whence)
		if err != nil || got != s.want {
			t.Errorf("Seek(%d, %d) = %d %v, want %d", s.off, s.whence, got, err, s.want)
		}
	}
	if got := readAll(t, f); got != "9" {
		t.Errorf("read after seek = %q, want 9", got)
	}
	_, err := f.Seek(-20, io.SeekCurrent)
	wantErr(t, "Seek before start", err, errInvalid)
	_, err = f.Seek(12, io.SeekStart)
	wantNoErr(t, "Seek past end", err)
	_, err = f.Write([]byte("x"))
	wantNoErr(t, "Write past end", err)
	if got, want := e.read("f"), "0123456789\x00\x00x"; got != want {
		t.Errorf("after sparse write = %q, want %q", got, want)
	}
}

func testTruncate(t *testing.T, e env) {
	e.write("f", "0123456789")
	f := e.open("f", os.O_RDWR)
	wantNoErr(t, "Truncate(4)", f.Truncate(4))
	if got := e.read("f"); got != "0123" {
		t.Errorf("after Truncate(4) = %q", got)
	}
	wantNoErr(t, "Truncate(6)", f.Truncate(6))
	if got := e.read("f"); got != "0123\x00\x00" {
		t.Errorf("after Truncate(6) = %q", got)
	}
	wantErr(t, "Truncate(-1)", f.Truncate(-1), errInvalid)
	ro := e.open("f", os.O_RDONLY)
	wantErr(t, "Truncate on O_RDONLY", ro.Truncate(0), errInvalid)
	if fi, err := e.fsys.Stat(e.p("f")); err != nil || fi.Size() != 6 {
		t.Errorf("Stat after failed truncate = %v %v, want size 6", fi, err)
	}
}

func testClosedFile(t *testing.T, e env) {
	e.write("f", "abc")
	f, err := e.fsys.OpenFile(e.p("f"), os.O_RDWR, 0)
	wantNoErr(t, "OpenFile", err)
	wantNoErr(t, "Close", f.Close())
	_, err = f.Read(make([]byte, 1))
	wantErr(t, "Read after Close", err, fs.ErrClosed)
	_, err = f.Write([]byte("x"))
	wantErr(t, "Write after Close", err, fs.ErrClosed)
	wantErr(t, "Sync after Close", f.Sync(), fs.ErrClosed)
	wantErr(t, "second Close", f.Close(), fs.ErrClosed)
}

func testHandleOutlivesName(t *testing.T, e env) {
	e.write("f", "abc")
	f := e.open("f", os.O_RDWR)
	wantNoErr(t, "Rename", e.fsys.Rename(e.p("f"), e.p("g")))
	_, err := f.Write([]byte("X"))
	wantNoErr(t, "Write after rename", err)
	if got := e.read("g"); got != "Xbc" {
		t.Errorf("renamed file = %q, want Xbc", got)
	}
	wantNoErr(t, "Remove", e.fsys.Remove(e.p("g")))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, f); got != "Xbc" {
		t.Errorf("read of removed file = %q, want Xbc", got)
	}
}

func testStat(t *testing.T, e env) {
	e.write("f", "abc")
	e.mkdir("d")
	fi, err := e.fsys.Stat(e.p("f"))
	wantNoErr(t, "Stat(f)", err)
	if fi.Name() != "f" || fi.Size() != 3 || fi.IsDir() || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("Stat(f) = %s %d %v", fi.Name(), fi.Size(), fi.Mode())
	}
	fi, err = e.fsys.Stat(e.p("d"))
	wantNoErr(t, "Stat(d)", err)
	if fi.Name() != "d" || !fi.IsDir() || fi.Mode()&fs.ModeDir == 0 {
		t.Errorf("Stat(d) = %s %v", fi.Name(), fi.Mode())
	}
	_, err = e.fsys.Stat(e.p("nope"))
	wantErr(t, "Stat(nope)", err, fs.ErrNotExist)
	_, err = e.fsys.Stat(e.p("f/x"))
	wantErr(t, "Stat(f/x)", err, errNotDir)
	_, err = e.fsys.Stat(e.p("f") + "/")
	wantErr(t, "Stat(f/)", err, errNotDir)
	_, err = e.fsys.Lstat(e.p("nope"))
	wantErr(t, "Lstat(nope)", err, fs.ErrNotExist)
	if fi, err := e.fsys.Stat(e.p("d/../f")); err != nil || fi.Size() != 3 {
		t.Errorf("Stat(d/../f) = %v %v", fi, err)
	}
}

func testSymlink(t *testing.T, e env) {
	e.write("d/f", "abc")
	wantNoErr(t, "Symlink file", e.fsys.Symlink("d/f", e.p("lf")))
	wantNoErr(t, "Symlink dir", e.fsys.Symlink("d", e.p("ld")))
	wantNoErr(t, "Symlink up", e.fsys.Symlink("../d/f", e.p("d/up")))
	wantNoErr(t, "Symlink dangling", e.fsys.Symlink("nope", e.p("dangling")))
	wantNoErr(t, "Symlink loop", e.fsys.Symlink("loop", e.p("loop")))

	if got := e.read("lf"); got != "abc" {
		t.Errorf("read through link = %q", got)
	}
	if got := e.read("ld/f"); got != "abc" {
		t.Errorf("read through dir link = %q", got)
	}
	if got := e.read("ld/up"); got != "abc" {
		t.Errorf("read through ../ link = %q", got)
	}
	fi, err := e.fsys.Stat(e.p("lf"))
	wantNoErr(t, "Stat(lf)", err)
	if !fi.Mode().IsRegular() || fi.Size() != 3 || fi.Name() != "lf" {
		t.Errorf("Stat(lf) = %s %d %v, want lf 3 regular", fi.Name(), fi.Size(), fi.Mode())
	}
	fi, err = e.fsys.Lstat(e.p("lf"))
	wantNoErr(t, "Lstat(lf)", err)
	if fi.Mode()&fs.ModeSymlink == 0 || fi.Mode().Type() != fs.ModeSymlink {
		t.Errorf("Lstat(lf) mode = %v, want symlink", fi.Mode())
	}
	if got, err := e.fsys.Readlink(e.p("lf")); got != "d/f" || err != nil {
		t.Errorf("Readlink(lf) = %q %v", got, err)
	}
	_, err = e.fsys.Readlink(e.p("d/f"))
	wantErr(t, "Readlink(file)", err, errInvalid)
	_, err = e.fsys.Readlink(e.p("nope"))
	wantErr(t, "Readlink(nope)", err, fs.ErrNotExist)
	_, err = e.fsys.Stat(e.p("dangling"))
	wantErr(t, "Stat(dangling)", err, fs.ErrNotExist)
	if _, err := e.fsys.Lstat(e.p("dangling")); err != nil {
		t.Errorf("Lstat(dangling): %v", err)
	}
	_, err = e.fsys.Stat(e.p("loop"))
	wantErr(t, "Stat(loop)", err, errLoop)
	wantLinkErr(t, "Symlink over existing", e.fsys.Symlink("x", e.p("lf")), fs.ErrExist)
	wantLinkErr(t, "Symlink in missing dir", e.fsys.Symlink("x", e.p("nope/l")), fs.ErrNotExist)
	_, err = e.fsys.OpenFile(e.p("dangling"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	wantErr(t, "O_EXCL on dangling link", err, fs.ErrExist)
	f := e.open("dangling", os.O_WRONLY|os.O_CREATE)
	_, err = f.Write([]byte("made"))
	wantNoErr(t, "Write through dangling link", err)
	if got := e.read("nope"); got != "made" {
		t.Errorf("target created through link = %q", got)
	}
	wantNoErr(t, "Remove(link)", e.fsys.Remove(e.p("lf")))
	if !e.exists("d/f") || e.exists("lf") {
		t.Errorf("Remove of a link must remove the link only")
	}
}

func testChmod(t *testing.T, e env) {
	e.write("f", "x")
	e.mkdir("d")
	for _, mode := range []fs.FileMode{0o755, 0o600, 0o700, 0o644} {
		wantNoErr(t, "Chmod", e.fsys.Chmod(e.p("f"), mode))
		fi, err := e.fsys.Stat(e.p("f"))
		wantNoErr(t, "Stat", err)
		if fi.Mode() != mode {
			t.Errorf("after Chmod(%v): mode %v", mode, fi.Mode())
		}
	}
	wantNoErr(t, "Chmod(d)", e.fsys.Chmod(e.p("d"), 0o700))
	if fi, err := e.fsys.Stat(e.p("d")); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		t.Errorf("Stat(d) after Chmod = %v %v", fi, err)
	}
	wantNoErr(t, "Symlink", e.fsys.Symlink("f", e.p("l")))
	wantNoErr(t, "Chmod(link)", e.fsys.Chmod(e.p("l"), 0o751))
	if fi, err := e.fsys.Stat(e.p("f")); err != nil || fi.Mode() != 0o751 {
		t.Errorf("Chmod through link: target mode %v %v, want 0751", fi, err)
	}
	wantErr(t, "Chmod(nope)", e.fsys.Chmod(e.p("nope"), 0o644), fs.ErrNotExist)
	if err := vfs.WriteFile(e.fsys, e.p("x"), []byte("#!"), 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := e.fsys.Stat(e.p("x")); err != nil || fi.Mode() != 0o755 {
		t.Errorf("WriteFile 0755: mode %v %v", fi, err)
	}
}

func testReadDir(t *testing.T, e env) {
	e.write("d/b", "x")
	e.write("d/a", "xy")
	e.mkdir("d/c")
	wantNoErr(t, "Symlink", e.fsys.Symlink("a", e.p("d/0link")))
	ents, err := e.fsys.ReadDir(e.p("d"))
	wantNoErr(t, "ReadDir", err)
	type row struct {
		Name string
		Dir  bool
		Type fs.FileMode
		Size int64
	}
	var got []row
	for _, d := range ents {
		fi, err := d.Info()
		wantNoErr(t, "Info", err)
		r := row{d.Name(), d.IsDir(), d.Type(), fi.Size()}
		if r.Dir {
			r.Size = 0 // directory sizes differ between file systems
		}
		got = append(got, r)
	}
	want := []row{{"0link", false, fs.ModeSymlink, 1}, {"a", false, 0, 2}, {"b", false, 0, 1}, {"c", true, fs.ModeDir, 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadDir (-want +got):\n%s", diff)
	}
	if got := e.names("d/c"); len(got) != 0 {
		t.Errorf("empty dir lists %v", got)
	}
	_, err = e.fsys.ReadDir(e.p("nope"))
	wantErr(t, "ReadDir(nope)", err, fs.ErrNotExist)
	_, err = e.fsys.ReadDir(e.p("d/a"))
	wantErr(t, "ReadDir(file)", err, errNotDir)
}

func testMkdir(t *testing.T, e env) {
	wantNoErr(t, "Mkdir", e.fsys.Mkdir(e.p("d"), 0o755))
	wantErr(t, "Mkdir existing", e.fsys.Mkdir(e.p("d"), 0o755), fs.ErrExist)
	wantErr(t, "Mkdir missing parent", e.fsys.Mkdir(e.p("x/y"), 0o755), fs.ErrNotExist)
	e.write("f", "x")
	wantErr(t, "Mkdir existing file", e.fsys.Mkdir(e.p("f"), 0o755), fs.ErrExist)
	wantErr(t, "Mkdir under file", e.fsys.Mkdir(e.p("f/x"), 0o755), errNotDir)
	wantNoErr(t, "MkdirAll", e.fsys.MkdirAll(e.p("a/b/c"), 0o755))
	wantNoErr(t, "MkdirAll existing", e.fsys.MkdirAll(e.p("a/b/c"), 0o755))
	wantNoErr(t, "MkdirAll trailing slash", e.fsys.MkdirAll(e.p("a/b/e")+"/", 0o755))
	wantErr(t, "MkdirAll over file", e.fsys.MkdirAll(e.p("f"), 0o755), errNotDir)
	wantErr(t, "MkdirAll under file", e.fsys.MkdirAll(e.p("f/g/h"), 0o755), errNotDir)
	if diff := cmp.Diff([]string{"c", "e"}, e.names("a/b")); diff != "" {
		t.Errorf("a/b (-want +got):\n%s", diff)
	}
	wantNoErr(t, "Symlink", e.fsys.Symlink("a", e.p("la")))
	wantNoErr(t, "MkdirAll through link", e.fsys.MkdirAll(e.p("la/n"), 0o755))
	if !e.exists("a/n") {
		t.Errorf("MkdirAll through a link did not create a/n")
	}
}

func testRemove(t *testing.T, e env) {
	e.write("f", "x")
	e.write("full/x", "x")
	e.mkdir("empty")
	wantNoErr(t, "Remove file", e.fsys.Remove(e.p("f")))
	wantNoErr(t, "Remove empty dir", e.fsys.Remove(e.p("empty")))
	wantErr(t, "Remove full dir", e.fsys.Remove(e.p("full")), errNotEmpty)
	wantErr(t, "Remove missing", e.fsys.Remove(e.p("f")), fs.ErrNotExist)
	wantErr(t, "Remove under file", e.fsys.Remove(e.p("full/x/y")), errNotDir)
	if diff := cmp.Diff([]string{"full"}, e.names(".")); diff != "" {
		t.Errorf("root (-want +got):\n%s", diff)
	}
}

func testRemoveAll(t *testing.T, e env) {
	e.write("t/a/b/c", "x")
	e.write("t/f", "x")
	wantNoErr(t, "Symlink", e.fsys.Symlink("../keep", e.p("t/link")))
	e.write("keep/k", "x")
	wantNoErr(t, "RemoveAll", e.fsys.RemoveAll(e.p("t")))
	wantNoErr(t, "RemoveAll missing", e.fsys.RemoveAll(e.p("t")))
	wantNoErr(t, "RemoveAll missing parent", e.fsys.RemoveAll(e.p("nope/x")))
	wantErr(t, "RemoveAll under file", e.fsys.RemoveAll(e.p("keep/k/x")), errNotDir)
	if diff := cmp.Diff([]string{"keep"}, e.names(".")); diff != "" {
		t.Errorf("root (-want +got):\n%s", diff)
	}
	if !e.exists("keep/k") {
		t.Errorf("RemoveAll followed a symbolic link")
	}
	e.write("single", "x")
	wantNoErr(t, "RemoveAll file", e.fsys.RemoveAll(e.p("single")))
	if e.exists("single") {
		t.Errorf("RemoveAll left a file")
	}
}

func testRename(t *testing.T, e env) {
	e.write("a", "A")
	e.write("b", "B")
	wantNoErr(t, "Rename file to new", e.fsys.Rename(e.p("a"), e.p("c")))
	wantNoErr(t, "Rename file over file", e.fsys.Rename(e.p("c"), e.p("b")))
	if got := e.read("b"); got != "A" || e.exists("a") || e.exists("c") {
		t.Errorf("after renames: b=%q a=%v c=%v", got, e.exists("a"), e.exists("c"))
	}
	wantNoErr(t, "Rename to itself", e.fsys.Rename(e.p("b"), e.p("b")))
	e.write("d/x", "X")
	e.mkdir("empty")
	wantNoErr(t, "Rename dir over empty dir", e.fsys.Rename(e.p("d"), e.p("empty")))
	if got := e.read("empty/x"); got != "X" || e.exists("d") {
		t.Errorf("after dir rename: empty/x=%q d=%v", got, e.exists("d"))
	}
	e.mkdir("sub")
	wantNoErr(t, "Rename across dirs", e.fsys.Rename(e.p("empty/x"), e.p("sub/y")))
	if got := e.read("sub/y"); got != "X" {
		t.Errorf("sub/y = %q", got)
	}
	wantNoErr(t, "Symlink", e.fsys.Symlink("b", e.p("l")))
	wantNoErr(t, "Rename link", e.fsys.Rename(e.p("l"), e.p("l2")))
	if got, _ := e.fsys.Readlink(e.p("l2")); got != "b" || !e.exists("b") {
		t.Errorf("renaming a link must move the link: Readlink = %q", got)
	}
}

func testRenameErrors(t *testing.T, e env) {
	e.write("f", "x")
	e.write("full/x", "x")
	e.mkdir("d/sub")
	tests := []struct {
		name     string
		old, new string
		want     []error
	}{
		{"missing source", "nope", "z", []error{fs.ErrNotExist}},
		{"missing target dir", "f", "nope/z", []error{fs.ErrNotExist}},
		{"file over dir", "f", "d", []error{errIsDir}},
		{"dir over file", "d", "f", []error{errNotDir}},
		{"dir over non-empty dir", "d", "full", []error{errNotEmpty, fs.ErrExist}},
		{"dir into itself", "d", "d/sub/x", []error{errInvalid}},
		{"dir over its own parent", "d/sub", "d", []error{errNotEmpty}},
		{"bad target parent before missing source", "nope", "f/x", []error{errNotDir}},
		{"file with trailing slash", "f", "g/", []error{errNotDir}},
	}
	for _, tc := range tests {
		err := e.fsys.Rename(e.p(tc.old), e.p(tc.new))
		wantLinkErr(t, fmt.Sprintf("%s: Rename(%s, %s)", tc.name, tc.old, tc.new), err, tc.want...)
	}
	if got := e.read("f"); got != "x" || !e.exists("d/sub") || !e.exists("full/x") {
		t.Errorf("a failed rename changed something")
	}
}

func testSyncDir(t *testing.T, e env) {
	e.write("d/f", "x")
	wantNoErr(t, "SyncDir", e.fsys.SyncDir(e.p("d")))
	wantNoErr(t, "SyncDir root", e.fsys.SyncDir(e.root))
	wantErr(t, "SyncDir missing", e.fsys.SyncDir(e.p("nope")), fs.ErrNotExist)
	wantErr(t, "SyncDir file", e.fsys.SyncDir(e.p("d/f")), errNotDir)
}

func testAtomicWrite(t *testing.T, e env) {
	e.write("f", "old")
	e.write("f", "new")
	if got := e.read("f"); got != "new" {
		t.Errorf("f = %q", got)
	}
	n, err := vfs.WriteFileFromN(e.fsys, e.p("g"), bytes.NewReader(make([]byte, 100_000)), 0o600)
	wantNoErr(t, "WriteFileFromN", err)
	if n != 100_000 {
		t.Errorf("WriteFileFromN n = %d", n)
	}
	if fi, err := e.fsys.Stat(e.p("g")); err != nil || fi.Size() != 100_000 || fi.Mode() != 0o600 {
		t.Errorf("Stat(g) = %v %v", fi, err)
	}
	err = vfs.WriteFile(e.fsys, e.p("nope/f"), []byte("x"), 0o644)
	wantErr(t, "WriteFile in missing dir", err, fs.ErrNotExist)
	err = vfs.WriteFileFrom(e.fsys, e.p("h"), iotestErrReader{}, 0o644)
	if !errors.Is(err, errReader) {
		t.Errorf("WriteFileFrom with failing reader: %v", err)
	}
	if diff := cmp.Diff([]string{"f", "g"}, e.names(".")); diff != "" {
		t.Errorf("leftovers (-want +got):\n%s", diff)
	}
}

var errReader = errors.New("vfstest: reader broke")

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errReader }

func testMkdirAllDurable(t *testing.T, e env) {
	wantNoErr(t, "MkdirAllDurable", vfs.MkdirAllDurable(e.fsys, e.p("a/b/c"), 0o755))
	wantNoErr(t, "MkdirAllDurable again", vfs.MkdirAllDurable(e.fsys, e.p("a/b/c"), 0o755))
	if fi, err := e.fsys.Stat(e.p("a/b/c")); err != nil || !fi.IsDir() {
		t.Errorf("Stat(a/b/c) = %v %v", fi, err)
	}
	e.write("f", "x")
	wantErr(t, "MkdirAllDurable under a file", vfs.MkdirAllDurable(e.fsys, e.p("f/g"), 0o755), errNotDir)
	wantErr(t, "MkdirAllDurable over a file", vfs.MkdirAllDurable(e.fsys, e.p("f"), 0o755), errNotDir)
}

func testConcurrent(t *testing.T, e env) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := e.p(fmt.Sprintf("f%d", i))
			for j := range 20 {
				if err := vfs.WriteFile(e.fsys, name, []byte(fmt.Sprint(j)), 0o644); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range 8 {
		if got := e.read(fmt.Sprintf("f%d", i)); got != "19" {
			t.Errorf("f%d = %q", i, got)
		}
	}
}

// testTrailingSlash pins the kernel's rules for a name ending in a
// separator, which differ per operation.
func testTrailingSlash(t *testing.T, e env) {
	e.write("f", "x")
	e.mkdir("d")
	wantNoErr(t, "Symlink", e.fsys.Symlink("d", e.p("ld")))
	wantNoErr(t, "Symlink", e.fsys.Symlink("nope", e.p("dangling")))
	create := os.O_WRONLY | os.O_CREATE
	_, err := e.fsys.OpenFile(e.p("new/"), create, 0o644)
	wantErr(t, "create new/", err, errIsDir)
	_, err = e.fsys.OpenFile(e.p("d/"), create|os.O_EXCL, 0o644)
	wantErr(t, "create d/ exclusively", err, errIsDir)
	_, err = e.fsys.OpenFile(e.p("dangling/"), create, 0o644)
	wantErr(t, "create dangling/", err, errIsDir)
	if fi, err := e.fsys.Lstat(e.p("ld/")); err != nil || !fi.IsDir() {
		t.Errorf("Lstat(ld/) = %v, %v; want the directory it points to", fi, err)
	}
	wantLinkErr(t, "Symlink over d/", e.fsys.Symlink("x", e.p("d/")), fs.ErrExist)
	wantErr(t, "Mkdir dangling/", e.fsys.Mkdir(e.p("dangling/"), 0o755), fs.ErrExist)
	wantErr(t, "Remove ld/", e.fsys.Remove(e.p("ld/")), errNotDir)
	wantErr(t, "MkdirAll f/", e.fsys.MkdirAll(e.p("f/"), 0o755), fs.ErrExist)
	wantNoErr(t, "Mkdir new/", e.fsys.Mkdir(e.p("new/"), 0o755))
	if !e.exists("new") || !e.exists("ld") || !e.exists("d") {
		t.Errorf("trailing-slash operations removed something")
	}
}
