package capsule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
)

// A snapshot of a million files is a snapshot.json of about 140 MB; parsed
// whole it costs several hundred MB. Verify, Checkout and Inspect read it
// instead one entry at a time with streamSnapshot, which understands the
// shape Marshal writes (one entry per line) and validates as it goes
// (snapshotCheck), remembering only what FORMAT §5.1's rules need: the
// previous path, the files and links that are ancestors of the current
// path, and the symbolic links. Bytes in any other shape are still a valid
// snapshot if ParseSnapshot says so; the callers fall back to it.

// errShape reports bytes not in the shape Marshal writes.
var errShape = errors.New("capsule: snapshot.json is not in the shape Marshal writes")

// maxEntryLine bounds one line of a streamed snapshot; a longer line (a
// path and a link target are at most 4 KiB each) goes to ParseSnapshot.
const maxEntryLine = 64 << 10

// streamSnapshot reads snapshot.json from r, entry by entry, calling fn (if
// not nil) with each entry once it has passed the checks that one entry can
// pass alone (its path, its fields, its order, that it lies below no file
// or link). It returns the snapshot's version and, after the last entry,
// the validation error ParseSnapshot would return (an ErrBadSnapshot), or
// fn's first error, or errShape (wrapped) when the bytes are not in
// Marshal's shape: the caller then falls back to ParseSnapshot, forgetting
// what fn was told.
func streamSnapshot(r io.Reader, fn func(Entry) error) (int, error) {
	br := bufio.NewReaderSize(r, maxEntryLine)
	version, empty, err := streamHeader(br)
	if err != nil {
		return 0, err
	}
	c := newSnapshotCheck(version)
	if !empty {
		if err := streamEntries(br, c, fn); err != nil {
			return version, err
		}
	}
	if err := streamTrailer(br, empty); err != nil {
		return version, err
	}
	return version, c.err()
}

// streamHeader reads `{"version": N, "entries": [` and its newline, or the
// whole of an empty snapshot, `{"version": N, "entries": []}`.
func streamHeader(br *bufio.Reader) (version int, empty bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false, shapeError("the first line: %v", err)
	}
	rest, ok := bytes.CutPrefix(line, []byte(`{"version": `))
	if !ok {
		return 0, false, shapeError("the first line")
	}
	num, tail, ok := bytes.Cut(rest, []byte(`, "entries": [`))
	if !ok {
		return 0, false, shapeError("the first line")
	}
	version, cerr := strconv.Atoi(string(num))
	if cerr != nil || strconv.Itoa(version) != string(num) {
		return 0, false, shapeError("the version")
	}
	switch string(tail) {
	case "\n":
		return version, false, nil
	case "]}\n", "]}":
		return version, true, nil
	}
	return 0, false, shapeError("the first line")
}

// streamEntries reads the lines `  {…},` and the last `  {…}`.
func streamEntries(br *bufio.Reader, c *snapshotCheck, fn func(Entry) error) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return shapeError("entry line %d: %v", c.n+2, err)
		}
		body, ok := bytes.CutPrefix(line[:len(line)-1], []byte("  "))
		if !ok {
			return shapeError("entry line %d", c.n+2)
		}
		body, more := bytes.CutSuffix(body, []byte(","))
		e, ok := decodeEntryLine(body)
		if !ok {
			return shapeError("entry line %d", c.n+2)
		}
		if c.add(e) && fn != nil {
			if err := fn(e); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
	}
}

// streamTrailer reads the closing `]}` (unless the header held it: empty)
// and allows only white space after it.
func streamTrailer(br *bufio.Reader, empty bool) error {
	rest, err := io.ReadAll(io.LimitReader(br, maxEntryLine))
	if err != nil {
		return shapeError("the end: %v", err)
	}
	if !empty {
		var ok bool
		if rest, ok = bytes.CutPrefix(rest, []byte("]}")); !ok {
			return shapeError("the end")
		}
	}
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return shapeError("the end")
	}
	return nil
}

func shapeError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errShape, fmt.Sprintf(format, args...))
}

// decodeEntryLine decodes one entry object as ParseSnapshot would: by the
// fast decoder when it can, else by encoding/json, strictly.
func decodeEntryLine(b []byte) (Entry, bool) {
	d := fastDecoder{b: b}
	if e, ok := d.entry(); ok && d.i == len(b) {
		return e, true
	}
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || dec.More() {
		return Entry{}, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Entry{}, false
	}
	return e, true
}

// snapshotCheck is Snapshot.Validate, one entry at a time, for entries in
// sorted order. Its problems read as Validate's, in the same order.
type snapshotCheck struct {
	version int
	n       int // entries seen
	prev    string
	// leaves holds the files and links whose paths are prefixes of the
	// last path: in sorted order only they can have entries below them.
	leaves []string
	leafOf map[string]EntryType
	links  map[string]string

	problems []string // version, then each entry's own, in order
	below    []string // entries below a file or link, in order
}

func newSnapshotCheck(version int) *snapshotCheck {
	c := &snapshotCheck{version: version, leafOf: map[string]EntryType{}, links: map[string]string{}}
	if !schema.CanRead(schema.Snapshot, version) {
		c.add1("version %d is not one this release reads (1 to %d)", version, SnapshotVersion)
	}
	return c
}

func (c *snapshotCheck) add1(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// add checks the next entry and reports whether it is sound on its own:
// its path is valid, in order, and lies below no file or link.
func (c *snapshotCheck) add(e Entry) bool {
	i := c.n
	c.n++
	sound := true
	if i > 0 && c.prev >= e.Path {
		c.add1("entries[%d]: %q is out of order or repeated (entries are sorted by path)", i, clip(e.Path))
		sound = false
	}
	c.prev = e.Path
	if err := manifest.ValidPath(e.Path); err != nil {
		c.add1("entries[%d]: %v", i, err)
		return false
	}
	before := len(c.problems)
	e.check(i, c.add1)
	sound = sound && len(c.problems) == before
	c.popLeaves(e.Path)
	for p := path.Dir(e.Path); p != "."; p = path.Dir(p) {
		if t, ok := c.leafOf[p]; ok {
			c.below = append(c.below, fmt.Sprintf("entries[%d]: %q lies below the %s %q", i, clip(e.Path), t, clip(p)))
			sound = false
			break
		}
	}
	if e.Type == TypeFile || e.Type == TypeSymlink {
		if _, ok := c.leafOf[e.Path]; !ok {
			c.leaves = append(c.leaves, e.Path)
		}
		c.leafOf[e.Path] = e.Type
	}
	if e.Type == TypeSymlink {
		c.links[e.Path] = e.Target
	}
	return sound
}

// popLeaves forgets the leaves no entry at or after p can lie below: a
// leaf l can have entries below it only while the paths are in [l, l+"0"),
// so once p is past that range it is done.
func (c *snapshotCheck) popLeaves(p string) {
	for len(c.leaves) > 0 {
		l := c.leaves[len(c.leaves)-1]
		if strings.HasPrefix(p, l) && (len(p) == len(l) || p[len(l)] <= '/') {
			return
		}
		c.leaves = c.leaves[:len(c.leaves)-1]
		delete(c.leafOf, l)
	}
}

// err returns the error Validate would, after the last entry.
func (c *snapshotCheck) err() error {
	probs := append(c.problems, c.below...)
	for _, p := range slices.Sorted(maps.Keys(c.links)) {
		if escapes(c.links, p) {
			probs = append(probs, fmt.Sprintf("symlink %q: target leaves the tree", clip(p)))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadSnapshot, strings.Join(probs, "; "))
	}
	return nil
}
