package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
)

func TestEmbedderFingerprint(t *testing.T) {
	e := Embedder{Name: "capsule-bm25-hash", Dims: 256, DType: "int8", Normalization: "l2", Model: "sha256:ab", Tokenizer: "capsule-tok/1", Chunker: "capsule-chunk/1"}
	fp, err := e.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(`{"chunker":"capsule-chunk/1","dims":256,"dtype":"int8","model":"sha256:ab","normalization":"l2","tokenizer":"capsule-tok/1"}`))
	if want := "sha256:" + hex.EncodeToString(sum[:]); fp != want {
		t.Errorf("fingerprint %s, want %s", fp, want)
	}
	renamed := e
	renamed.Name = "a display name"
	if fp2, _ := renamed.Fingerprint(); fp2 != fp {
		t.Error("the name changed the fingerprint")
	}
	// A same-dimension model swap must change it.
	swapped := e
	swapped.Model = "sha256:cd"
	if fp3, _ := swapped.Fingerprint(); fp3 == fp {
		t.Error("another model has the same fingerprint")
	}
	if _, err := (Embedder{Dims: 256}).Fingerprint(); !errors.Is(err, ErrInput) {
		t.Errorf("incomplete embedder: %v", err)
	}
}
