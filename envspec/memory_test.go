package envspec

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/schema"
)

// withMemory is the FORMAT §11.7.1 example with a memory member.
func withMemory(t *testing.T, member string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/example.v2.spec.json")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"lifecycle":`, `"memory": `+member+`, "lifecycle":`, 1)
	if s == string(b) {
		t.Fatal("the example has no lifecycle member")
	}
	return []byte(s)
}

// FORMAT §11.7.1: the OPTIONAL memory member is read, round-trips, and
// sets the working memory's cap; without it the cap is the default and
// Marshal writes no memory member.
func TestMemoryMember(t *testing.T) {
	data := withMemory(t, `{"working_max_bytes": 4096, "embedder": {"provider": "openai", "model": "text-embedding-3-small",
		"url": "https://api.openai.com/v1", "secret": "GITHUB_TOKEN", "dims": 256}}`)
	s, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.WorkingMaxBytes(); got != 4096 {
		t.Errorf("WorkingMaxBytes = %d, want 4096", got)
	}
	want := Embedder{Provider: EmbedderOpenAI, Model: "text-embedding-3-small", URL: "https://api.openai.com/v1", Secret: "GITHUB_TOKEN", Dims: 256}
	if s.Memory.Embedder == nil || *s.Memory.Embedder != want {
		t.Errorf("embedder = %+v, want %+v", s.Memory.Embedder, want)
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil || back.WorkingMaxBytes() != 4096 || *back.Memory.Embedder != want {
		t.Errorf("round trip: %v, %+v", err, back)
	}

	b, _ := os.ReadFile("testdata/example.v2.spec.json")
	plain, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Memory != nil || plain.WorkingMaxBytes() != DefaultWorkingMaxBytes {
		t.Errorf("without memory: %+v, cap %d", plain.Memory, plain.WorkingMaxBytes())
	}
	if out, _ := plain.Marshal(); strings.Contains(string(out), `"memory"`) {
		t.Errorf("a spec without memory marshals one:\n%s", out)
	}
	if _, err := Parse(withMemory(t, `{"embedder": {"provider": "builtin"}}`)); err != nil {
		t.Errorf("builtin embedder alone: %v", err)
	}
}

// FORMAT §11.7.1: every wrong memory member is refused with an error
// naming the member, and none repeats a credential.
func TestMemoryMemberRefused(t *testing.T) {
	for _, c := range []struct{ member, where, msg string }{
		{`{"working_max_bytes": 0}`, "/memory/working_max_bytes", "minimum"},
		{`{"working_max_bytes": 2097152}`, "/memory/working_max_bytes", "maximum"},
		{`{"working_max_bytes": "64k"}`, "/memory/working_max_bytes", "want integer"},
		{`{"cap": 1}`, "/memory", "cap"},
		{`{"embedder": {"model": "m"}}`, "/memory/embedder", "provider"},
		{`{"embedder": {"provider": "cohere", "model": "m"}}`, "/memory/embedder/provider", "builtin"},
		{`{"embedder": {"provider": "openai"}}`, "/memory/embedder/model", "needs a model"},
		{`{"embedder": {"provider": "ollama", "model": "m", "dims": 0}}`, "/memory/embedder/dims", "minimum"},
		{`{"embedder": {"provider": "gemini", "model": "m", "url": "ftp://x"}}`, "/memory/embedder/url", "does not match"},
		{`{"embedder": {"provider": "openai", "model": "m", "secret": "OPENAI_API_KEY"}}`, "/memory/embedder/secret", "not declared in secrets"},
		{`{"embedder": {"provider": "openai", "model": "m", "secret": "sk-abc"}}`, "/memory/embedder/secret", "does not match"},
		{`{"embedder": {"provider": "builtin", "secret": "GITHUB_TOKEN"}}`, "/memory/embedder", "takes no url and no secret"},
		{`{"embedder": {"provider": "openai", "model": "m", "url": "https://user:hunter2pass@example.com/v1"}}`, "/memory/embedder/url", "embedder url"},
		{`{"embedder": {"provider": "openai", "model": "m", "secret": "sk_live_4eC39HqLyjWDarjtT1zdp7dc"}}`, "/memory/embedder/secret", "NAME of a secret"},
	} {
		_, err := Parse(withMemory(t, c.member))
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Parse = %v, want a *ParseError", c.member, err)
			continue
		}
		found := false
		for _, p := range pe.Problems {
			found = found || p.Where == c.where && strings.Contains(p.Msg, c.msg)
		}
		if !found {
			t.Errorf("%s: problems %v, want one at %s saying %q", c.member, pe.Problems, c.where, c.msg)
		}
		if strings.Contains(err.Error(), "hunter2pass") || strings.Contains(err.Error(), "4eC39HqLyjWDarjtT1zdp7dc") {
			t.Errorf("%s: the error repeats the password: %v", c.member, err)
		}
	}
}

// FORMAT §11.7.1: the down step to version 1 drops the memory member
// (version 1 has no place for it) instead of refusing the spec.
func TestMemoryMemberDown(t *testing.T) {
	data := withMemory(t, `{"working_max_bytes": 4096, "embedder": {"provider": "builtin"}}`)
	// The example's HTTP server cannot go down; take it out.
	s, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	s.Tools = s.Tools[:1]
	up, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	down, err := schema.Down(schema.Environment, 2, 1, up)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(down), "memory\"") || strings.Contains(string(down), "working_max_bytes") {
		t.Errorf("down view keeps the memory member:\n%s", down)
	}
	if _, err := Parse(down); err != nil {
		t.Errorf("down view: %v", err)
	}
}
