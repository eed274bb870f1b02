package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// linkedFixture is a workspace with links that lead outside it: a file
// link (absolute and relative) to outside/secret.txt and a directory link
// to outside.
func linkedFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, Options{}, map[string]string{"in.txt": "inside\n"})
	must(t, os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.ws, "filelink")))
	must(t, os.Symlink("../outside/secret.txt", filepath.Join(f.ws, "rellink")))
	must(t, os.Symlink(f.outside, filepath.Join(f.ws, "dirlink")))
	must(t, os.Mkdir(filepath.Join(f.ws, "sub"), 0o755))
	must(t, os.Symlink("../../outside", filepath.Join(f.ws, "sub", "up")))
	return f
}

// Every way out of the workspace is refused with a message, and nothing
// outside it is read, created or changed (FORMAT-independent: issue 13
// requirement 7).
func TestConfinement(t *testing.T) {
	f := linkedFixture(t)
	before := tree(t, f.outside)
	abs := filepath.Join(f.outside, "secret.txt")
	var cases []struct{ tool, args string }
	add := func(tool, format string, paths ...string) {
		for _, p := range paths {
			cases = append(cases, struct{ tool, args string }{tool, fmt.Sprintf(format, p)})
		}
	}
	files := []string{"../outside/secret.txt", "a/../../outside/secret.txt", abs, "filelink", "rellink",
		"dirlink/secret.txt", "sub/up/secret.txt", "../../../../etc/passwd", "/etc/passwd"}
	add(ReadFile, `{"path":%q}`, files...)
	add(WriteFile, `{"path":%q,"content":"pwned"}`, append(files, "dirlink/new.txt", "dirlink/newdir/f.txt", "sub/up/new.txt", "../new.txt")...)
	add(EditFile, `{"path":%q,"old_string":"outside","new_string":"pwned"}`, files...)
	dirs := []string{"..", "../outside", f.outside, "dirlink", "sub/up", "/"}
	add(ListFiles, `{"path":%q}`, dirs...)
	add(ListFiles, `{"path":%q,"recursive":true}`, dirs...)
	add(Search, `{"pattern":"secret","path":%q}`, append(dirs, "filelink", "rellink", "dirlink/secret.txt")...)
	for _, c := range cases {
		msg := f.fails(t, c.tool, c.args)
		if !strings.Contains(msg, "outside the workspace") && !strings.Contains(msg, "is absolute") && !strings.Contains(msg, "symbolic link") {
			t.Errorf("%s %s: message %q does not say why", c.tool, c.args, msg)
		}
		if strings.Contains(msg, "outside secret") || strings.Contains(msg, f.outside) && !strings.Contains(c.args, f.outside) {
			t.Errorf("%s %s: message leaks the outside: %q", c.tool, c.args, msg)
		}
	}
	// Walking the workspace does not follow the links out.
	for _, args := range []string{`{"pattern":"secret"}`, `{"pattern":"secret","path":"sub"}`} {
		if got := f.ok(t, Search, args); strings.Contains(got, "outside secret") {
			t.Errorf("search %s followed a link out: %q", args, got)
		}
	}
	if got := f.ok(t, ListFiles, `{"recursive":true}`); strings.Contains(got, "dirlink/") || strings.Contains(got, "up/") {
		t.Errorf("recursive listing followed a link out:\n%s", got)
	}
	if diff := cmp.Diff(before, tree(t, f.outside)); diff != "" {
		t.Errorf("outside changed (-before +after):\n%s", diff)
	}
	if got, _ := f.read(t, "filelink"); got != "outside secret\n" {
		t.Errorf("the link's target was changed: %q", got)
	}
}

// Links that stay inside the workspace work for reading; writes refuse to
// replace a link with a file.
func TestInsideLinks(t *testing.T) {
	f := newFixture(t, Options{}, map[string]string{"real/f.txt": "inside\n"})
	must(t, os.Symlink("real", filepath.Join(f.ws, "d")))
	must(t, os.Symlink("real/f.txt", filepath.Join(f.ws, "fl")))
	if got := f.ok(t, ReadFile, `{"path":"d/f.txt"}`); got != "     1\tinside\n" {
		t.Errorf("read through an inside link: %q", got)
	}
	f.ok(t, ReadFile, `{"path":"fl"}`)
	f.ok(t, WriteFile, `{"path":"d/g.txt","content":"g"}`)
	if got, _ := f.read(t, "real/g.txt"); got != "g" {
		t.Errorf("write through an inside directory link: %q", got)
	}
	f.fails(t, WriteFile, `{"path":"fl","content":"x"}`, "symbolic link", "real/f.txt")
	f.fails(t, EditFile, `{"path":"fl","old_string":"inside","new_string":"x"}`, "symbolic link")
}

// A directory link swapped from inside to outside between calls, and
// swapped back and forth while calls run: no call ever reads or writes
// outside (os.Root resolves each path component as it opens it).
func TestSwappedLink(t *testing.T) {
	f := newFixture(t, Options{}, map[string]string{"real/f.txt": "inside\n"})
	must(t, os.WriteFile(filepath.Join(f.outside, "f.txt"), []byte("outside secret\n"), 0o644))
	link := filepath.Join(f.ws, "d")
	point := func(to string) {
		tmp := link + ".new"
		must(t, os.Symlink(to, tmp))
		must(t, os.Rename(tmp, link))
	}
	point("real")
	f.ok(t, ReadFile, `{"path":"d/f.txt"}`)
	point(f.outside)
	f.fails(t, ReadFile, `{"path":"d/f.txt"}`, "outside the workspace")
	f.fails(t, WriteFile, `{"path":"d/f.txt","content":"pwned"}`, "outside the workspace")
	before := tree(t, f.outside)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			point([]string{"real", f.outside}[i%2])
		}
	})
	for range 300 {
		if r := f.run(ReadFile, `{"path":"d/f.txt"}`); strings.Contains(r.Content, "outside secret") {
			t.Errorf("read outside through a swapped link: %q", r.Content)
		}
		f.run(WriteFile, `{"path":"d/f.txt","content":"inside\n"}`)
		f.run(EditFile, `{"path":"d/f.txt","old_string":"secret","new_string":"pwned"}`)
	}
	close(stop)
	wg.Wait()
	if diff := cmp.Diff(before, tree(t, f.outside)); diff != "" {
		t.Errorf("outside changed (-before +after):\n%s", diff)
	}
}
