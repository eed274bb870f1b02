package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Embedder says what makes the vectors of a version-2 memory index
// comparable (FORMAT §11.7.2). Name is for people; it is never compared.
type Embedder struct {
	Name          string
	Dims          int
	DType         string // int8 or float16
	Normalization string // l2 or none
	Model         string // digest of the weights, or of the endpoint's model identity
	Tokenizer     string
	Chunker       string
}

// Fingerprint is the sha256 of the canonical JSON (RFC 8785: members sorted,
// no white space) of every member of e but Name, as "sha256:<hex>". Two
// indexes whose fingerprints differ must never be queried together.
func (e Embedder) Fingerprint() (string, error) {
	if e.Dims < 1 || (e.DType != "int8" && e.DType != "float16") || (e.Normalization != "l2" && e.Normalization != "none") ||
		e.Model == "" || e.Tokenizer == "" || e.Chunker == "" {
		return "", fmt.Errorf("%w: embedder %+v is incomplete", ErrInput, e)
	}
	// Keys in code-unit order; values are ASCII-safe strings and an integer,
	// for which encoding/json without HTML escaping gives RFC 8785's form.
	m := map[string]any{"chunker": e.Chunker, "dims": e.Dims, "dtype": e.DType, "model": e.Model,
		"normalization": e.Normalization, "tokenizer": e.Tokenizer}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return "", fmt.Errorf("schema: fingerprint: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
