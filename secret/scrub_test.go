package secret_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentcapsule/capsule/secret"
)

func TestScrub(t *testing.T) {
	values := map[string]string{
		"OPENAI_API_KEY": "sk-live-abcdef123456",
		"SHORTER":        "abcdef12",        // inside the first value: the longest wins there
		"HTML":           `pa<ss>&"word"\x`, // has JSON-escaped forms
	}
	s, err := secret.NewScrubber(values)
	if err != nil {
		t.Fatal(err)
	}
	escaped, _ := json.Marshal(values["HTML"])
	for _, c := range []struct{ in, want string }{
		{"no secret here", "no secret here"},
		{"key=sk-live-abcdef123456.", "key=[secret OPENAI_API_KEY]."},
		{"abcdef12 and sk-live-abcdef123456", "[secret SHORTER] and [secret OPENAI_API_KEY]"},
		{"sk-live-abcdef123456sk-live-abcdef123456", "[secret OPENAI_API_KEY][secret OPENAI_API_KEY]"},
		{"{\"out\":" + string(escaped) + "}", "{\"out\":\"[secret HTML]\"}"},
		{`pa<ss>&"word"\x`, "[secret HTML]"},
		{`"pa\u003css\u003e\u0026\"word\"\\x"`, `"[secret HTML]"`},
		{"abcdef1abcdef12", "abcdef1[secret SHORTER]"},
	} {
		if got := s.Scrub(c.in); got != c.want {
			t.Errorf("Scrub(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := string(s.ScrubBytes([]byte(c.in))); got != c.want {
			t.Errorf("ScrubBytes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var zero *secret.Scrubber
	if got := zero.Scrub("x sk-live"); got != "x sk-live" {
		t.Errorf("nil Scrubber changed text: %q", got)
	}
}

func TestScrubberRefusesWeakValues(t *testing.T) {
	for _, v := range []string{"", "a", "abc", "secret", "[secret", "KEY]", "t KEY]xyz", "abc[sec", "x[secret KEY]y"} {
		_, err := secret.NewScrubber(map[string]string{"KEY": v, "OTHER": "fine-value-123"})
		var we *secret.WeakValueError
		if !errors.As(err, &we) || we.Name != "KEY" {
			t.Errorf("value %q: err = %v, want a WeakValueError for KEY", v, err)
			continue
		}
		if len(v) >= 4 && v != "secret" && strings.Contains(err.Error(), v) {
			t.Errorf("value %q: the error holds the value: %v", v, err)
		}
	}
	if _, err := secret.NewScrubber(map[string]string{"KEY": "abcd", "B": "[]x]y[z"}); err != nil {
		t.Errorf("4 bytes and brackets that build no marker: %v", err)
	}
}

// TestScrubLeavesNoValue is the property: for random values (brackets,
// quotes, backslashes, names and pieces of markers among them) and random
// texts made of them, no value and no JSON-escaped form of one survives.
func TestScrubLeavesNoValue(t *testing.T) {
	names := []string{"A", "KEY", "secret", "T_2"}
	atom := rapid.SampledFrom([]string{"a", "b", "c", "e", "t", " ", "[", "]", "\\", "\"", "<", "&", "\n", "é", "secret", "KEY", "[secret ", "]"})
	piece := rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(atom, 1, 8).Draw(t, "atoms"), "")
	})
	rapid.Check(t, func(t *rapid.T) {
		values := map[string]string{}
		for _, n := range names[:rapid.IntRange(1, len(names)).Draw(t, "n")] {
			values[n] = piece.Draw(t, "value_"+n)
		}
		s, err := secret.NewScrubber(values)
		var we *secret.WeakValueError
		if errors.As(err, &we) {
			return // refused up front: never scrubbed unreliably
		}
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for range rapid.IntRange(0, 12).Draw(t, "pieces") {
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				text.WriteString(piece.Draw(t, "filler"))
			default:
				v := values[rapid.SampledFrom(names[:len(values)]).Draw(t, "which")]
				if rapid.Bool().Draw(t, "escaped") {
					b, _ := json.Marshal(v)
					v = string(b)
				}
				text.WriteString(v)
			}
		}
		out := s.Scrub(text.String())
		for n, v := range values {
			b, _ := json.Marshal(v)
			for _, form := range []string{v, string(b[1 : len(b)-1])} {
				if strings.Contains(out, form) {
					t.Fatalf("value of %s (%q) survives in %q (from %q)", n, form, out, text.String())
				}
			}
		}
	})
}
