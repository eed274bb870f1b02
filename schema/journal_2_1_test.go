package schema

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestJournal2to1(t *testing.T) {
	for _, in := range []string{userLineV1, userLineV2} {
		out, err := journal2to1([]byte(in))
		if err != nil || !bytes.Equal(out, []byte(in)) {
			t.Errorf("%s: = %s, %v", in, out, err)
		}
	}
	for k := range journalV2Kinds {
		line := strings.Replace(approvalLineV2, `"kind":"approval"`, `"kind":"`+k+`"`, 1)
		if _, err := journal2to1([]byte(line)); !errors.Is(err, ErrNotExpressible) || !strings.Contains(err.Error(), k) {
			t.Errorf("%s: %v, want ErrNotExpressible", k, err)
		}
	}
	if _, err := journal2to1([]byte(strings.Replace(userLineV2, `"v":2`, `"v":3`, 1))); !errors.Is(err, ErrInput) {
		t.Errorf("a version-3 line: %v", err)
	}
}

// TestJournalUpThenDown: a version-1 line of any version-1 kind comes back
// byte for byte.
func TestJournalUpThenDown(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kind := rapid.SampledFrom([]string{"instruction", "user", "assistant", "reasoning", "tool_call", "tool_result", "model_change", "usage", "frozen", "resumed", "moved", "epoch", "x-custom"}).Draw(t, "kind")
		text := rapid.StringMatching(`[a-z ]{0,20}`).Draw(t, "text")
		line := []byte(`{"body":{"text":"` + text + `"},"clock":1,"epoch":0,"id":"sha256:00","kind":"` + kind + `","machine":"ma","seq":1,"v":1}`)
		up, err := Up(Journal, 1, 2, line)
		if err != nil {
			t.Fatal(err)
		}
		down, err := Down(Journal, 2, 1, up)
		if err != nil || !bytes.Equal(down, line) {
			t.Fatalf("= %s, %v", down, err)
		}
	})
}
