package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// TestIndexUpThenDown: 0.1.0's placeholder migrated up and down is the
// same bytes; any version-2 index converts down to that placeholder.
func TestIndexUpThenDown(t *testing.T) {
	up, err := Up(MemoryIndex, 1, 2, []byte(emptyIndexV1))
	if err != nil {
		t.Fatal(err)
	}
	down, err := Down(MemoryIndex, 2, 1, up)
	if err != nil || string(down) != emptyIndexV1 {
		t.Fatalf("round trip = %q, %v", down, err)
	}
	rapid.Check(t, func(t *rapid.T) {
		s := indexV2{Version: 2, Chunks: []chunkV2{}}
		if rapid.Bool().Draw(t, "built") {
			s.Embedder = &embedderV2{Fingerprint: "sha256:" + rapid.StringMatching(`[0-9a-f]{64}`).Draw(t, "fp"), Dims: rapid.IntRange(1, 1024).Draw(t, "dims"), DType: "int8"}
			s.Watermark = &watermarkV2{Events: rapid.Int64Range(0, 1e6).Draw(t, "events"), Heads: map[string]headV2{}}
			for i, n := 0, rapid.IntRange(0, 5).Draw(t, "chunks"); i < n; i++ {
				s.Chunks = append(s.Chunks, chunkV2{Event: "sha256:" + rapid.StringMatching(`[0-9a-f]{64}`).Draw(t, "ev"), Text: "sha256:00", Vector: "AAE="})
			}
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		down, err := index2to1(b)
		if err != nil || !bytes.Equal(down, []byte(emptyIndexV1)) {
			t.Fatalf("down = %q, %v", down, err)
		}
	})
}

func TestIndex2to1RefusesBadInput(t *testing.T) {
	for _, in := range []string{emptyIndexV1, `{"version":2}`, `{"version":2,"chunks":[],"embedder":null,"watermark":null,"x":0}`} {
		if _, err := index2to1([]byte(in)); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want ErrInput", in, err)
		}
	}
}
