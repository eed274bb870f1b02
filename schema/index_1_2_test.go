package schema

import (
	"errors"
	"testing"
)

func TestIndex1to2MakesAStaleIndex(t *testing.T) {
	for _, in := range []string{emptyIndexV1, `{"version":1,"entries":[{"text":"x","vector":[0.1,0.2]}]}`} {
		out, err := index1to2([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		var s indexV2
		if err := decodeStrict(out, &s); err != nil {
			t.Fatal(err)
		}
		if s.Version != 2 || s.Embedder != nil || s.Watermark != nil || s.Chunks == nil || len(s.Chunks) != 0 {
			t.Errorf("%s gives %s, want a stale empty index", in, out)
		}
	}
	if d, err := Destructive(MemoryIndex, 1, 2); err != nil || !d {
		t.Errorf("Destructive = %v, %v; the step drops version-1 entries", d, err)
	}
}

func TestIndex1to2RefusesBadInput(t *testing.T) {
	for _, in := range []string{`{"version":2,"entries":[]}`, `{"version":1}`, `{"version":1,"entries":[],"x":1}`, `{`} {
		if _, err := index1to2([]byte(in)); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want ErrInput", in, err)
		}
	}
}
