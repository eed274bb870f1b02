package capsule

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/digest"
)

// marshalShape writes s in the shape Marshal writes, valid or not, in the
// order given.
func marshalShape(s Snapshot) []byte {
	b := fmt.Appendf(nil, "{\"version\": %d, \"entries\": [", s.Version)
	for i, e := range s.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  "...)
		b = appendEntry(b, e)
	}
	if len(s.Entries) > 0 {
		b = append(b, '\n')
	}
	return append(b, "]}\n"...)
}

// TestStreamSnapshotMatchesParseSnapshot pins that reading snapshot.json
// entry by entry accepts, yields and refuses exactly what ParseSnapshot
// does, with the same words (FORMAT §5.1), for snapshots in Marshal's shape.
func TestStreamSnapshotMatchesParseSnapshot(t *testing.T) {
	d := digest.FromString("x")
	f := func(p string) Entry { return Entry{Path: p, Type: TypeFile, Size: 1, Blob: d} }
	dir := func(p string) Entry { return Entry{Path: p, Type: TypeDir} }
	link := func(p, to string) Entry { return Entry{Path: p, Type: TypeSymlink, Target: to} }
	tests := []struct {
		name    string
		entries []Entry
		version int
	}{
		{"empty", nil, 1},
		{"tree", []Entry{f("a/b"), dir("a/c"), link("a/l", "b"), f("b <&> \"q\" é")}, 1},
		{"unsorted", []Entry{dir("b"), dir("a")}, 1},
		{"duplicate", []Entry{f("a"), f("a")}, 1},
		{"traversal", []Entry{dir("../a")}, 1},
		{"below a file", []Entry{f("a"), f("a/b")}, 1},
		{"below a file past siblings", []Entry{f("a"), f("a-1"), f("a.b"), f("a/b"), f("a/c/d"), f("b")}, 1},
		{"below a nested file", []Entry{f("a"), f("a!"), f("a!/x"), f("a/x")}, 1},
		{"below a link", []Entry{link("l", "."), f("l/x")}, 1},
		{"escaping link", []Entry{link("a/l", "../../x")}, 1},
		{"link loop", []Entry{link("a", "b/x"), link("b", "a/x")}, 1},
		{"file without blob", []Entry{{Path: "f", Type: TypeFile}}, 1},
		{"unknown type", []Entry{{Path: "f", Type: "fifo"}}, 1},
		{"newer version", nil, 2},
		{"many problems", []Entry{f("/abs"), f("b"), f("a"), f("a/x"), link("z", "/etc")}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := marshalShape(Snapshot{Version: tc.version, Entries: tc.entries})
			want, werr := ParseSnapshot(b)
			var got []Entry
			version, gerr := streamSnapshot(bytes.NewReader(b), func(e Entry) error { got = append(got, e); return nil })
			if errors.Is(gerr, errShape) {
				t.Fatalf("streamSnapshot: %v", gerr)
			}
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("error:\n got %v\nwant %v", gerr, werr)
			}
			if werr != nil {
				return
			}
			if version != want.Version {
				t.Errorf("version %d, want %d", version, want.Version)
			}
			if len(want.Entries)+len(got) == 0 {
				return
			}
			if diff := cmp.Diff(want.Entries, got); diff != "" {
				t.Errorf("entries (-parse +stream):\n%s", diff)
			}
		})
	}
}

// TestStreamSnapshotWithholdsUnsoundEntries pins that an entry below a file
// or a link never reaches the caller (Checkout would write through it).
func TestStreamSnapshotWithholdsUnsoundEntries(t *testing.T) {
	d := digest.FromString("x")
	b := marshalShape(Snapshot{Version: 1, Entries: []Entry{
		{Path: "a", Type: TypeFile, Blob: d}, {Path: "a/b", Type: TypeFile, Blob: d},
		{Path: "l", Type: TypeSymlink, Target: "."}, {Path: "l/x", Type: TypeFile, Blob: d}, {Path: "m", Type: TypeDir},
	}})
	var got []string
	_, err := streamSnapshot(bytes.NewReader(b), func(e Entry) error { got = append(got, e.Path); return nil })
	if !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("err = %v, want ErrBadSnapshot", err)
	}
	if want := []string{"a", "l", "m"}; !cmp.Equal(got, want) {
		t.Errorf("entries handed on: %q, want %q", got, want)
	}
}

// TestStreamSnapshotOtherShapes pins that bytes ParseSnapshot reads but
// Marshal would not write are reported as errShape, for the fallback.
func TestStreamSnapshotOtherShapes(t *testing.T) {
	d := digest.FromString("x")
	canonical := string(marshalShape(Snapshot{Version: 1, Entries: []Entry{{Path: "a", Type: TypeFile, Size: 1, Blob: d}, {Path: "b", Type: TypeDir}}}))
	for name, b := range map[string]string{
		"one line":       strings.ReplaceAll(canonical, "\n", ""),
		"entries first":  `{"entries": [], "version": 1}`,
		"entry per line": strings.Replace(canonical, `,"type"`, ",\n\"type\"", 1),
		"trailing data":  canonical + "x",
	} {
		if _, err := streamSnapshot(strings.NewReader(b), nil); !errors.Is(err, errShape) {
			t.Errorf("%s: err = %v, want errShape", name, err)
		}
	}
	if _, err := streamSnapshot(strings.NewReader(canonical), nil); err != nil {
		t.Errorf("canonical: %v", err)
	}
}
