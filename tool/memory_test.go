package tool

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/envspec"
)

// memArgs is a memory call's arguments as JSON.
func memArgs(t *testing.T, kv ...string) string {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, err := json.Marshal(m)
	must(t, err)
	return string(b)
}

// FORMAT §6.4: read, replace (whole or old→new exactly once) and append,
// each call seeing the file the previous one left.
func TestMemoryActions(t *testing.T) {
	f := newFixture(t, Options{MemoryFile: "mem", MaxOutput: 64}, nil)
	for _, c := range []struct {
		args []string
		out  string // the result
		file string // the working memory after the call
	}{
		{[]string{"action", "read"}, "(working memory is empty)", ""},
		{[]string{"action", "append", "content", "- first"}, "appended 7 bytes to the working memory (7 bytes now)", "- first"},
		{[]string{"action", "append", "content", "- second\n"}, "appended 9 bytes to the working memory (17 bytes now)", "- first\n- second\n"},
		{[]string{"action", "append", "content", "- third"}, "appended 7 bytes to the working memory (24 bytes now)", "- first\n- second\n- third"},
		{[]string{"action", "replace", "old", "second", "new", "2nd"}, "replaced 1 occurrence in the working memory (21 bytes now)", "- first\n- 2nd\n- third"},
		{[]string{"action", "replace", "old", "- 2nd\n", "new", ""}, "replaced 1 occurrence in the working memory (15 bytes now)", "- first\n- third"},
		{[]string{"action", "read"}, "- first\n- third", "- first\n- third"},
		{[]string{"action", "replace", "content", "# Notes\n- the bug is in parse.go\n"}, "working memory replaced (33 bytes now)", "# Notes\n- the bug is in parse.go\n"},
		{[]string{"action", "replace", "content", ""}, "working memory replaced (0 bytes now)", ""},
		{[]string{"action", "append", "content", "x"}, "appended 1 bytes to the working memory (1 bytes now)", "x"},
	} {
		args := memArgs(t, c.args...)
		if got := f.ok(t, Memory, args); got != c.out {
			t.Errorf("%s: result %q, want %q", args, got, c.out)
		}
		if b, _ := os.ReadFile(f.memFile); string(b) != c.file {
			t.Errorf("%s: file %q, want %q", args, b, c.file)
		}
	}
	noTemps(t, filepath.Dir(f.memFile))
}

// FORMAT §6.4: a refused call says why and what to do, and changes
// nothing.
func TestMemoryRefusals(t *testing.T) {
	f := newFixture(t, Options{MemoryFile: "mem", MaxMemoryBytes: 40}, nil)
	const start = "- a note\n- a note\n- another\n"
	f.ok(t, Memory, memArgs(t, "action", "replace", "content", start))
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"action", "replace"}, []string{"needs content", "or old and new"}},
		{[]string{"action", "replace", "old", "a note"}, []string{"needs content", "or old and new"}},
		{[]string{"action", "replace", "content", "x", "old", "a", "new", "b"}, []string{"not both"}},
		{[]string{"action", "replace", "old", "missing", "new", "x"}, []string{"does not occur", "copy the text exactly"}},
		{[]string{"action", "replace", "old", "a note", "new", "x"}, []string{"occurs 2 times", "occurs once"}},
		{[]string{"action", "replace", "old", "", "new", "x"}, []string{"invalid arguments", "/old"}},
		{[]string{"action", "append"}, []string{"needs content"}},
		{[]string{"action", "append", "content", ""}, []string{"needs content"}},
		{[]string{"action", "append", "content", "x", "old", "a"}, []string{"takes no old or new"}},
		{[]string{"action", "write", "content", "x"}, []string{"invalid arguments", "/action"}},
		{[]string{"action", "append", "content", strings.Repeat("z", 13)}, []string{"append refused", "would be 41 bytes", "limit of 40 bytes", "memory.working_max_bytes", "nothing was changed", "shorter text"}},
		{[]string{"action", "replace", "content", strings.Repeat("z", 41)}, []string{"replace refused", "would be 41 bytes", "limit of 40 bytes"}},
		{[]string{"action", "replace", "old", "another", "new", strings.Repeat("z", 20)}, []string{"would be 41 bytes"}},
	} {
		f.fails(t, Memory, memArgs(t, c.args...), c.want...)
		if b, _ := os.ReadFile(f.memFile); string(b) != start {
			t.Fatalf("%v changed the memory file: %q", c.args, b)
		}
	}
	// Exactly at the limit is allowed.
	f.ok(t, Memory, memArgs(t, "action", "append", "content", strings.Repeat("z", 12)))
}

// The limit is the one Options gives (the spec's, through the node), the
// default is the spec's default, and the model is told the limit; the
// model always sees its whole working memory, whatever MaxOutput.
func TestMemoryLimit(t *testing.T) {
	if MaxMemoryBytes != envspec.DefaultWorkingMaxBytes {
		t.Fatalf("MaxMemoryBytes %d, envspec.DefaultWorkingMaxBytes %d", MaxMemoryBytes, envspec.DefaultWorkingMaxBytes)
	}
	for _, limit := range []int{0, 100, 200 << 10} {
		f := newFixture(t, Options{MemoryFile: "mem", MaxMemoryBytes: limit, MaxOutput: 64}, nil)
		want := limit
		if want == 0 {
			want = MaxMemoryBytes
		}
		desc := ""
		for _, tl := range f.w.Tools() {
			if tl.Name == Memory {
				desc = tl.Description
			}
		}
		if !strings.Contains(desc, fmt.Sprintf("at most %d bytes", want)) {
			t.Errorf("limit %d: the description does not give it: %q", limit, desc)
		}
		full := strings.Repeat("m", want)
		f.ok(t, Memory, memArgs(t, "action", "replace", "content", full))
		if r := f.run(Memory, `{"action":"read"}`); r.Content != full || r.Full != nil {
			t.Errorf("limit %d: a full working memory is cut at MaxOutput: %d bytes shown", limit, len(r.Content))
		}
		f.fails(t, Memory, memArgs(t, "action", "append", "content", "m"), fmt.Sprintf("limit of %d bytes", want))
	}

	plain := newFixture(t, Options{}, nil)
	plain.fails(t, Memory, `{"action":"read"}`, `unknown tool "memory"`)
	for _, tl := range plain.w.Tools() {
		if tl.Name == Memory {
			t.Error("memory offered without a memory file")
		}
	}
}
