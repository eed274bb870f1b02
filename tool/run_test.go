package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcapsule/capsule/schema"
)

func TestToolsDeclared(t *testing.T) {
	f := newFixture(t, Options{MemoryFile: "mem"}, nil)
	var names []string
	for _, tl := range f.w.Tools() {
		names = append(names, tl.Name)
		var doc map[string]any
		if err := json.Unmarshal(tl.Parameters, &doc); err != nil || doc["type"] != "object" {
			t.Errorf("%s: parameters %s are not an object schema (%v)", tl.Name, tl.Parameters, err)
		}
		c := jsonschema.NewCompiler()
		d, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(tl.Parameters)))
		must(t, c.AddResource("x.json", d))
		if _, err := c.Compile("x.json"); err != nil {
			t.Errorf("%s: schema does not compile: %v", tl.Name, err)
		}
		if len(tl.Description) < 80 {
			t.Errorf("%s: description %q teaches little", tl.Name, tl.Description)
		}
	}
	want := []string{ReadFile, ListFiles, Search, WriteFile, EditFile, Memory}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(append(want, MemorySearch), Names()); diff != "" { // memory_search needs a Recall
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestEffect(t *testing.T) {
	want := map[string]string{ReadFile: schema.EffectRead, ListFiles: schema.EffectRead, Search: schema.EffectRead,
		WriteFile: schema.EffectWorkspace, EditFile: schema.EffectWorkspace, Memory: schema.EffectWorkspace,
		"run": "", "counter.increment": "", "": ""}
	for name, class := range want {
		if got := Effect(name); got != class {
			t.Errorf("Effect(%q) = %q, want %q", name, got, class)
		}
	}
}

// Arguments that are not an object valid under the tool's schema, and
// unknown tools, are error results naming the problem.
func TestInvalidArgs(t *testing.T) {
	f := newFixture(t, Options{}, map[string]string{"a.txt": "a\n"})
	for _, tc := range []struct{ name, args, want string }{
		{ReadFile, `{"path":`, "not valid JSON"},
		{ReadFile, `["a.txt"]`, "must be a JSON object"},
		{ReadFile, `null`, "must be a JSON object"},
		{ReadFile, `"a.txt"`, "must be a JSON object"},
		{ReadFile, `{}`, "missing property 'path'"},
		{ReadFile, `{"path":7}`, "at /path"},
		{ReadFile, `{"path":""}`, "at /path"},
		{ReadFile, `{"path":"a.txt","offset":0}`, "at /offset"},
		{ReadFile, `{"path":"a.txt","limit":1.5}`, "at /limit"},
		{ReadFile, `{"path":"a.txt","lines":3}`, "lines"},
		{WriteFile, `{"path":"b.txt"}`, "missing property 'content'"},
		{EditFile, `{"path":"a.txt","old_string":"","new_string":"b"}`, "at /old_string"},
		{EditFile, `{"path":"a.txt","old_string":"a","new_string":"b","replace_all":"yes"}`, "at /replace_all"},
		{ListFiles, `{"recursive":1}`, "at /recursive"},
		{Search, `{"path":"."}`, "missing property 'pattern'"},
		{"run", `{"cmd":"ls"}`, `unknown tool "run"; the tools are: read_file, list_files, search, write_file, edit_file`},
		{"", `{}`, `unknown tool ""`},
	} {
		msg := f.fails(t, tc.name, tc.args, tc.want)
		if tc.name != "run" && tc.name != "" && !strings.HasPrefix(msg, tc.name+": ") {
			t.Errorf("%s %s: message %q does not name the tool", tc.name, tc.args, msg)
		}
	}
	if got := f.ok(t, ListFiles, ``); got != "a.txt\n" {
		t.Errorf("empty arguments read as {}: %q", got)
	}
	if _, ok := f.read(t, "b.txt"); ok {
		t.Error("an invalid call wrote a file")
	}
}

// Output over the cap: Content is cut at a line end with the note, Full
// is the whole output; under the cap nothing is attached.
func TestOutputCap(t *testing.T) {
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf("line %02d é", i))
	}
	f := newFixture(t, Options{MaxOutput: 200}, map[string]string{"big.txt": strings.Join(lines, "\n") + "\n", "small.txt": "s\n"})
	var want strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&want, "%6d\t%s\n", i+1, l)
	}
	whole := want.String()
	r := f.run(ReadFile, `{"path":"big.txt"}`)
	if r.IsError || r.Full == nil || r.MediaType != "text/plain; charset=utf-8" {
		t.Fatalf("capped result: error %v, full %d bytes, media type %q", r.IsError, len(r.Full), r.MediaType)
	}
	if string(r.Full) != whole {
		t.Errorf("Full is not the whole output")
	}
	m := regexp.MustCompile(`(?s)^(.*)\n\[output truncated: showing (\d+) of (\d+) bytes; the whole output is attached\]\nUse offset and limit to read the rest\.$`).FindStringSubmatch(r.Content)
	if m == nil {
		t.Fatalf("no note in %q", r.Content)
	}
	shown, _ := strconv.Atoi(m[2])
	total, _ := strconv.Atoi(m[3])
	if total != len(whole) || shown > 200 || shown < 100 || m[1]+"\n" != whole[:shown] || !strings.HasSuffix(whole[:shown], "\n") {
		t.Errorf("showing %d of %d (whole %d): cut %q", shown, total, len(whole), m[1])
	}
	if small := f.run(ReadFile, `{"path":"small.txt"}`); small.Full != nil || small.MediaType != "" {
		t.Errorf("uncapped result has an attachment: %+v", small)
	}
	// A cut inside one long line lands on a rune boundary.
	g := newFixture(t, Options{MaxOutput: 101}, map[string]string{"u.txt": strings.Repeat("é", 200)})
	u := g.run(ReadFile, `{"path":"u.txt"}`)
	if !utf8.ValidString(u.Content) || u.Full == nil {
		t.Errorf("cut in a rune: valid %v", utf8.ValidString(u.Content))
	}
}

// A cancelled context runs nothing.
func TestCancelled(t *testing.T) {
	f := newFixture(t, Options{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := f.w.Run(ctx, WriteFile, []byte(`{"path":"x","content":"y"}`)); !r.IsError || !strings.Contains(r.Content, "not run") {
		t.Errorf("cancelled run: %+v", r)
	}
	if _, ok := f.read(t, "x"); ok {
		t.Error("a cancelled write wrote")
	}
}

// FuzzRun: any tool name and any arguments give a result, never a panic,
// and nothing outside the workspace changes. Replay a failure with
// go test ./tool/ -run FuzzRun/<name of the saved case>.
func FuzzRun(f *testing.F) {
	for _, seed := range []struct{ name, args string }{
		{ReadFile, `{"path":"a.txt","offset":2,"limit":1}`}, {WriteFile, `{"path":"d/n.txt","content":"x"}`},
		{EditFile, `{"path":"a.txt","old_string":"a","new_string":"b"}`}, {ListFiles, `{"recursive":true}`},
		{Search, `{"pattern":"(?i)A","glob":"*.txt"}`}, {Memory, `{"action":"replace","content":"m"}`},
		{ReadFile, `{"path":"../outside/secret.txt"}`}, {ReadFile, `{"path":"link/secret.txt"}`},
		{"nope", `[]`}, {Search, `{"pattern":"(","path":"\u0000"}`}, {ReadFile, `{"path":"a.txt","offset":1e300}`},
	} {
		f.Add(seed.name, []byte(seed.args))
	}
	base := f.TempDir()
	ws, outside, mem := filepath.Join(base, "ws"), filepath.Join(base, "outside"), filepath.Join(base, "memory")
	for _, d := range []string{ws, outside, mem} {
		must(f, os.MkdirAll(d, 0o755))
	}
	must(f, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\nb\n"), 0o644))
	must(f, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644))
	must(f, os.Symlink(outside, filepath.Join(ws, "link")))
	w, err := OpenWorkspace(ws, Options{MemoryFile: filepath.Join(mem, "working_memory.md"), MaxOutput: 512})
	must(f, err)
	f.Cleanup(func() { w.Close() })
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		r := w.Run(context.Background(), name, args)
		if r.Content == "" && r.IsError {
			t.Errorf("error result without a message")
		}
		if Effect(name) == "" && !r.IsError {
			t.Errorf("unknown tool %q ran: %q", name, r.Content)
		}
		if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "outside" {
			t.Fatalf("outside file changed: %q %v", b, err)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 1 {
			t.Fatalf("outside gained files: %v", ents)
		}
	})
}
