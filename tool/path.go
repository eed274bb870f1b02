package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// clean checks a path argument and returns it in the form os.Root and its
// fs.FS accept: relative, slash-separated, cleaned, "." for the root. The
// second result is a message for the model when the path is refused.
// os.Root refuses escapes again, through symbolic links too; this check
// only gives the plain cases a clear message.
func clean(p string) (string, string) {
	if p == "" {
		return ".", ""
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Sprintf("path %q contains a NUL byte", p)
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Sprintf("path %q is absolute; paths are relative to the workspace root (e.g. src/main.go)", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Sprintf("path %q leads outside the workspace; tools reach only files inside it", p)
	}
	return c, ""
}

// explain turns an error of a file operation on the path p into a message
// for the model, without the host's absolute paths.
func explain(op, p string, err error) string {
	switch {
	case escapes(err):
		return fmt.Sprintf("%s: path %q leads outside the workspace (through \"..\" or a symbolic link); tools reach only files inside it", op, p)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s: %q does not exist; list_files shows what there is", op, p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("%s: %q: permission denied", op, p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %q: %v", op, p, pe.Err)
	}
	return fmt.Sprintf("%s: %q: %v", op, p, err)
}

// escapes reports whether err is os.Root's refusal of a path that leaves
// the root. The os package exports no sentinel for it, so its text is
// matched; a test pins the text for each kind of escape.
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}
