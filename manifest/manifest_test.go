package manifest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// example returns the manifest shown in FORMAT §2.
func example() *Manifest {
	m := New(Agent{ID: "01J2Z3K4M5N6P7Q8R9S0T1V2W3", Name: "research-bot", Created: "2026-07-01T12:00:00Z"},
		Writer{Release: "0.1.0", Commit: "a4ce769"})
	m.Holder = Holder{Node: "n3f7kq2m4x8v6b1c9d5h0j2l7p4", Epoch: 3}
	m.Journal = Journal{
		Events: 5, Bytes: 2310, Digest: digest.FromString("journal bytes"),
		Heads: map[string]Head{
			"m1": {Seq: 3, ID: string(digest.FromString("e3")), Clock: 4, Epoch: 3},
			"m2": {Seq: 2, ID: string(digest.FromString("e5")), Clock: 5, Epoch: 3},
		},
	}
	for _, p := range LayoutFiles {
		m.SetFile(File{Path: p, Size: int64(len(p)), Digest: digest.FromString(p)})
	}
	return m
}

// FORMAT §2.1: Marshal is deterministic and Parse(Marshal(m)) == m.
func TestMarshalGoldenAndRoundTrip(t *testing.T) {
	m := example()
	got, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "example.manifest.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./manifest -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("Marshal mismatch (-golden +got), rerun with -update if intended:\n%s", diff)
	}
	back, err := Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	again, _ := back.Marshal()
	if !bytes.Equal(again, got) {
		t.Error("second Marshal differs from the first")
	}
	if !bytes.HasSuffix(got, []byte("}\n")) {
		t.Error("no trailing newline")
	}
}

func TestMarshalSortsFilesAndRefusesInvalid(t *testing.T) {
	m := example()
	m.Files[0], m.Files[3] = m.Files[3], m.Files[0]
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(b); err != nil {
		t.Fatalf("unsorted files were not sorted: %v", err)
	}
	m.Agent.ID = "nope"
	if _, err := m.Marshal(); !errors.Is(err, ErrInvalid) {
		t.Errorf("Marshal of an invalid manifest: got %v, want ErrInvalid", err)
	}
}

// edit returns the example as a generic JSON text after fn rewrote it.
func edit(t *testing.T, fn func(s string) string) []byte {
	t.Helper()
	b, err := example().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return []byte(fn(string(b)))
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("test edit: " + old + " not in manifest")
		}
		return strings.Replace(s, old, new, 1)
	}
}

// FORMAT §2.2: Parse names every problem, with its field and, where it is a
// matter of syntax or type, its line and column.
func TestParseProblems(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want []string // each must appear in the error
	}{
		{"syntax error has line:col", edit(t, replace(`"format": 1,`, `"format": 1,,`)), []string{"2:15: JSON syntax"}},
		{"truncated", edit(t, func(s string) string { return s[:40] }), []string{"unexpected end of input"}},
		{"not an object", []byte(`[1]`), []string{"must be a JSON object"}},
		{"trailing data", []byte(`{"format":1} {}`), []string{"extra data after the top-level object"}},
		{"duplicate key", edit(t, replace(`"format": 1,`, `"format": 1, "format": 1,`)), []string{"2:16: format: duplicate key"}},
		{"nested duplicate key", edit(t, replace(`"epoch": 3`, `"epoch": 3, "epoch": 4`)), []string{"holder.epoch: duplicate key"}},
		{"unknown members all named", edit(t, replace(`"format": 1,`, `"format": 1, "x": 1, "y": 2,`)), []string{"x: unknown member", "y: unknown member", "2:16"}},
		{"unknown nested member", edit(t, replace(`"epoch": 3`, `"epoch": 3, "lease": 1`)), []string{`holder: unknown member "lease"`}},
		{"wrong type located", edit(t, replace(`"epoch": 3`, `"epoch": "3"`)), []string{"10:17: holder.epoch: want uint64, got JSON string"}},
		{"missing format", []byte(`{"agent":{}}`), []string{"format: missing"}},
		{"format not an integer", []byte(`{"format":"1"}`), []string{"format: must be an integer"}},
		{"missing members", []byte(`{"format":1}`), []string{"agent: missing", "holder: missing", "files: missing", "journal: missing"}},
		{"bad values all named", edit(t, func(s string) string {
			s = replace(`"01J2Z3K4M5N6P7Q8R9S0T1V2W3"`, `"01j2"`)(s)
			s = replace(`"2026-07-01T12:00:00Z"`, `"yesterday"`)(s)
			s = replace(`"release": "0.1.0"`, `"release": ""`)(s)
			return replace(`"size": 23`, `"size": -1`)(s)
		}), []string{"agent.id: \"01j2\" is not a ULID", "agent.created", "writer.release: is empty", "files[0].size: is negative"}},
		{"holder epoch without node", edit(t, replace(`"node": "n3f7kq2m4x8v6b1c9d5h0j2l7p4"`, `"node": ""`)), []string{"holder.node: is empty but holder.epoch is 3"}},
		{"journal heads disagree with events", edit(t, replace(`"events": 5`, `"events": 6`)), []string{"heads' sequence numbers add up to 5"}},
		{"empty journal with events", edit(t, replace(`"bytes": 2310`, `"bytes": 0`)), []string{"an empty journal (0 bytes) has 0 events"}},
		{"missing schema kind", edit(t, replace(`"coordination": 1,`, ``)), []string{"schemas.coordination: missing"}},
		{"unknown schema kind", edit(t, replace(`"coordination": 1,`, `"coordination": 1, "workflow": 1,`)), []string{"schemas.workflow: unknown kind"}},
		{"manifest schema differs from format", edit(t, replace(`"manifest": 1`, `"manifest": 2`)), []string{"schemas.manifest: is 2 but format is 1"}},
		{"file outside the layout", edit(t, replace(`"memory/working_memory.md"`, `"memory/notes.md"`)), []string{`"memory/notes.md" is not a file of the format-1 layout`, "no entry for memory/working_memory.md"}},
		{"path escapes", edit(t, replace(`"memory/working_memory.md"`, `"../x"`)), []string{`has an empty, "." or ".." component`}},
		{"bad digest", edit(t, replace(string(digest.FromString(SnapshotPath)), "sha256:00")), []string{"files[0].digest"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseNewerFormatIsUnsupported(t *testing.T) {
	in := []byte(`{"format": 2, "something_new": true}`)
	_, err := Parse(in)
	var ve *VersionError
	if !errors.As(err, &ve) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v, want a *VersionError", err)
	}
	if diff := cmp.Diff(VersionError{Kind: "manifest", Got: 2, Max: 1}, *ve); diff != "" {
		t.Error(diff)
	}
	if !strings.Contains(err.Error(), "upgrade capsule") {
		t.Errorf("%q does not say what to do", err)
	}
}

func TestParseTooLarge(t *testing.T) {
	_, err := Parse(make([]byte, MaxSize+1))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

// FORMAT §2.3: extensions are kept; other unknown members are refused.
func TestExtensionsRoundTrip(t *testing.T) {
	in := edit(t, replace(`"format": 1,`, `"format": 1, "extensions": {"com.example.tag": {"b": 1,  "a": [1, 2]}},`))
	m, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(back.Extensions["com.example.tag"]), `{"b":1,"a":[1,2]}`; got != want {
		t.Errorf("extension = %s, want %s (member order and values kept)", got, want)
	}
}

// FORMAT §11: a newer schema version of any kind is refused with its name.
func TestCheckVersions(t *testing.T) {
	m := example()
	if err := m.CheckVersions(); err != nil {
		t.Fatalf("current versions: %v", err)
	}
	m.Schemas[schema.Journal] = schema.Current[schema.Journal] + 1
	m.Schemas[schema.Snapshot] = 0
	var got []VersionError
	for _, e := range m.VersionErrors() {
		got = append(got, *e)
	}
	want := []VersionError{
		{Kind: "journal", Got: schema.Current[schema.Journal] + 1, Max: schema.Current[schema.Journal], Writer: m.Writer.Release},
		{Kind: "snapshot", Got: 0, Max: schema.Current[schema.Snapshot], Writer: m.Writer.Release},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	if err := m.CheckVersions(); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), fmt.Sprintf("journal schema version %d (written by %s) is newer", schema.Current[schema.Journal]+1, m.Writer.Release)) {
		t.Errorf("CheckVersions: %v", err)
	}
}

// FORMAT §11.4: a refusal names the release that wrote the record, and
// only when the manifest's writer release is a plain release string.
func TestVersionErrorNamesWriter(t *testing.T) {
	m := example()
	m.Schemas[schema.Journal] = schema.Current[schema.Journal] + 1
	for _, tc := range []struct{ release, want string }{
		{"0.9.1", "(written by 0.9.1)"},
		{"0.9.1\x1b[31m", "journal schema version " + fmt.Sprint(schema.Current[schema.Journal]+1) + " is newer"},
	} {
		m.Writer.Release = tc.release
		if err := m.CheckVersions(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("writer %q: %v, want it to contain %q", tc.release, err, tc.want)
		}
	}
	b := []byte(`{"format": 7, "writer": {"release": "0.9.1", "commit": "x"}}`)
	var ve *VersionError
	if _, err := Parse(b); !errors.As(err, &ve) || ve.Writer != "0.9.1" || !strings.Contains(err.Error(), "manifest schema version 7 (written by 0.9.1) is newer") {
		t.Errorf("Parse of a newer format: %v", err)
	}
}

func TestIsTimestamp(t *testing.T) {
	for s, want := range map[string]bool{
		"2026-07-01T12:00:00Z": true, "2026-07-01T12:00:00.123456789Z": true,
		"2026-07-01T12:00:00+02:00": false, "2026-13-01T12:00:00Z": false, "2026-07-01 12:00:00Z": false,
		"2026-07-01T12:00:00.Z": false, "": false, "2026-07-01T24:00:00Z": false,
	} {
		if got := IsTimestamp(s); got != want {
			t.Errorf("IsTimestamp(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestIsULID(t *testing.T) {
	for s, want := range map[string]bool{
		"01J2Z3K4M5N6P7Q8R9S0T1V2W3": true, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ": true,
		"8ZZZZZZZZZZZZZZZZZZZZZZZZZ": false, "01J2Z3K4M5N6P7Q8R9S0T1V2WU": false, "01j2z3k4m5n6p7q8r9s0t1v2w3": false, "01J2": false,
	} {
		if got := IsULID(s); got != want {
			t.Errorf("IsULID(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestValidPath(t *testing.T) {
	for p, ok := range map[string]bool{
		"a": true, "a/b c/d.txt": true, "": false, "/a": false, "a//b": false, "a/./b": false,
		"a/../b": false, "..": false, "a/": false, "a\x00b": false, "\xff": false,
	} {
		if err := ValidPath(p); (err == nil) != ok {
			t.Errorf("ValidPath(%q) = %v, want ok=%v", p, err, ok)
		}
	}
}
