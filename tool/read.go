package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// sniffBytes is how much of a file is looked at to call it binary.
const sniffBytes = 8000

// binary reports whether b looks like a binary file: a NUL byte near the
// start, as git and grep decide.
func binary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), sniffBytes)], 0) >= 0
}

// load reads the regular file p of the root, refusing directories and
// files over MaxFileBytes. The message is for the model.
func (w *Workspace) load(op, p string) ([]byte, string) {
	f, err := w.root.Open(p)
	if err != nil {
		return nil, explain(op, p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, explain(op, p, err)
	}
	if st.IsDir() {
		return nil, fmt.Sprintf("%s: %q is a directory; list_files lists it", op, p)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Sprintf("%s: %q is not a regular file", op, p)
	}
	limit := w.opts.MaxFileBytes
	if st.Size() > limit {
		return nil, fmt.Sprintf("%s: %q is %d bytes, over the %d-byte limit of %s; use search to find the lines you need", op, p, st.Size(), limit, op)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, explain(op, p, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Sprintf("%s: %q grew over the %d-byte limit of %s while being read", op, p, limit, op)
	}
	return b, ""
}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// readFile shows lines of a text file, each prefixed with its number and a
// tab, and a footer naming the lines shown when they are not all of them.
func (w *Workspace) readFile(_ context.Context, raw json.RawMessage) Result {
	var a readArgs
	if msg := decode(ReadFile, raw, &a); msg != "" {
		return failf("%s", msg)
	}
	p, msg := clean(a.Path)
	if msg != "" {
		return failf("%s: %s", ReadFile, msg)
	}
	b, msg := w.load(ReadFile, p)
	if msg != "" {
		return failf("%s", msg)
	}
	if binary(b) {
		return failf("%s: %q is a binary file of %d bytes; read_file shows text files only", ReadFile, p, len(b))
	}
	if len(b) == 0 {
		return Result{Content: fmt.Sprintf("(%s is empty)", p)}
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first := max(a.Offset, 1)
	if first > len(lines) {
		return failf("%s: offset %d is past the end of %q, which has %d lines", ReadFile, first, p, len(lines))
	}
	last := len(lines)
	if a.Limit > 0 {
		last = min(last, first-1+a.Limit)
	}
	var out strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&out, "%6d\t%s", i, strings.TrimSuffix(lines[i-1], "\n"))
		out.WriteByte('\n')
	}
	if first > 1 || last < len(lines) {
		fmt.Fprintf(&out, "[lines %d-%d of %d", first, last, len(lines))
		if last < len(lines) {
			fmt.Fprintf(&out, "; offset=%d reads on", last+1)
		}
		out.WriteString("]\n")
	}
	return Result{Content: out.String()}
}
