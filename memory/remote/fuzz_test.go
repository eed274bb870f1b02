package remote

import (
	"errors"
	"testing"
)

// FuzzOpenAIVectors: any answer body gives n vectors or an error that
// wraps ErrMalformed, never a panic.
func FuzzOpenAIVectors(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":"AACAPw=="},{"index":1,"embedding":[0.5,1e40]}]}`), uint8(2))
	f.Add([]byte(`{"data":[{"index":1,"embedding":"AACAPw="},{"index":1,"embedding":[]}]}`), uint8(2))
	f.Add([]byte(`{"data":[{"embedding":null}]}`), uint8(1))
	f.Fuzz(func(t *testing.T, raw []byte, n uint8) {
		vecs, err := openaiVectors(raw, int(n))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(vecs) != int(n) {
			t.Fatalf("%d vectors for %d texts", len(vecs), n)
		}
		for i, v := range vecs {
			if v == nil {
				t.Fatalf("vector %d is nil", i)
			}
		}
	})
}
