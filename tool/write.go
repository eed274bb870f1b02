package tool

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// atomicWrite replaces the file p of root with data: a temporary file in
// the same directory, written and fsynced, renamed over p, then the
// directory fsynced, so a crash leaves the old content or the new one.
// Missing parent directories are created.
func atomicWrite(root *os.Root, p string, data []byte, perm fs.FileMode) error {
	dir := path.Dir(p)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path.Join(dir, ".capsule-tmp-"+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, p)
	}
	if err != nil {
		root.Remove(tmp)
		return err
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// target checks that p may be written: it is not a directory and not a
// symbolic link (a rename would replace the link itself, not the file it
// names). It returns the mode to keep and whether p exists.
func (w *Workspace) target(op, p string) (fs.FileMode, bool, string) {
	if p == "." {
		return 0, false, fmt.Sprintf("%s: the path names the workspace root, not a file", op)
	}
	st, err := w.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0o644, false, ""
	case err != nil:
		return 0, false, explain(op, p, err)
	case st.Mode()&fs.ModeSymlink != 0:
		return 0, false, w.linkRefusal(op, p)
	case st.IsDir():
		return 0, false, fmt.Sprintf("%s: %q is a directory", op, p)
	case !st.Mode().IsRegular():
		return 0, false, fmt.Sprintf("%s: %q is not a regular file", op, p)
	}
	return st.Mode().Perm(), true, ""
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (w *Workspace) writeFile(_ context.Context, raw json.RawMessage) Result {
	var a writeArgs
	if msg := decode(WriteFile, raw, &a); msg != "" {
		return failf("%s", msg)
	}
	p, msg := clean(a.Path)
	if msg != "" {
		return failf("%s: %s", WriteFile, msg)
	}
	if int64(len(a.Content)) > w.opts.MaxFileBytes {
		return failf("%s: content is %d bytes, over the %d-byte limit", WriteFile, len(a.Content), w.opts.MaxFileBytes)
	}
	perm, existed, msg := w.target(WriteFile, p)
	if msg != "" {
		return failf("%s", msg)
	}
	if err := atomicWrite(w.root, p, []byte(a.Content), perm); err != nil {
		return failf("%s", explain(WriteFile, p, err))
	}
	verb := "created"
	if existed {
		verb = "replaced"
	}
	return Result{Content: fmt.Sprintf("%s %s (%d bytes)", verb, p, len(a.Content))}
}

type editArgs struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func (w *Workspace) editFile(_ context.Context, raw json.RawMessage) Result {
	var a editArgs
	if msg := decode(EditFile, raw, &a); msg != "" {
		return failf("%s", msg)
	}
	p, msg := clean(a.Path)
	if msg != "" {
		return failf("%s: %s", EditFile, msg)
	}
	if a.OldString == a.NewString {
		return failf("%s: old_string and new_string are the same; there is nothing to change", EditFile)
	}
	perm, _, msg := w.target(EditFile, p)
	if msg != "" {
		return failf("%s", msg)
	}
	b, msg := w.load(EditFile, p)
	if msg != "" {
		return failf("%s", msg)
	}
	text := string(b)
	n := strings.Count(text, a.OldString)
	switch {
	case n == 0:
		return failf("%s: old_string was not found in %q; read_file it and copy the text exactly, whitespace included and without the line-number prefixes", EditFile, p)
	case n > 1 && !a.ReplaceAll:
		return failf("%s: old_string occurs %d times in %q; include more surrounding text to make it unique, or set replace_all to replace them all", EditFile, n, p)
	}
	if !a.ReplaceAll {
		n = 1
	}
	out := strings.Replace(text, a.OldString, a.NewString, n)
	if int64(len(out)) > w.opts.MaxFileBytes {
		return failf("%s: the result would be %d bytes, over the %d-byte limit", EditFile, len(out), w.opts.MaxFileBytes)
	}
	if err := atomicWrite(w.root, p, []byte(out), perm); err != nil {
		return failf("%s", explain(EditFile, p, err))
	}
	return Result{Content: fmt.Sprintf("replaced %d occurrence(s) in %s", n, p)}
}

// linkRefusal says why op does not write the symbolic link p, naming its
// target only when the target is inside the workspace.
func (w *Workspace) linkRefusal(op, p string) string {
	if _, err := w.root.Stat(p); escapes(err) {
		return fmt.Sprintf("%s: %q is a symbolic link that leads outside the workspace; tools reach only files inside it", op, p)
	}
	to, _ := w.root.Readlink(p)
	return fmt.Sprintf("%s: %q is a symbolic link (to %q); %s does not replace links: write to the file it names", op, p, to, op)
}
