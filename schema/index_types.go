package schema

import "encoding/json"

// Frozen copies of the memory index's versions (FORMAT §3.1, §11.7).

// indexV1 is memory/vector_index/index.json version 1: a placeholder that
// release 0.1.0 wrote with no entries and never read.
type indexV1 struct {
	Version int               `json:"version"`
	Entries []json.RawMessage `json:"entries"`
}

// emptyIndexV1 is the bytes 0.1.0 wrote for every capsule (capsule.EmptyIndex).
const emptyIndexV1 = "{\"version\": 1, \"entries\": []}\n"

// indexV2 is memory/vector_index/index.json version 2: an index derived from
// the journal and the working memory, which a reader trusts only while its
// embedder and watermark match what it would build (issue 15).
type indexV2 struct {
	Version int `json:"version"`
	// Embedder is null for an index no embedder built yet: stale, rebuilt on open.
	Embedder *embedderV2 `json:"embedder"`
	// Watermark is null for an index that reflects no source: stale.
	Watermark *watermarkV2 `json:"watermark"`
	// Chunks are sorted by source, then span.
	Chunks []chunkV2 `json:"chunks"`
}

// embedderV2 says what makes two vectors comparable. Fingerprint is the
// sha256 of the canonical JSON (RFC 8785) of every member but Fingerprint
// and Name; a reader compares fingerprints, never names.
type embedderV2 struct {
	Fingerprint   string `json:"fingerprint"`
	Name          string `json:"name"`
	Dims          int    `json:"dims"`
	DType         string `json:"dtype"`         // int8 or float16
	Normalization string `json:"normalization"` // l2 or none
	Model         string `json:"model"`         // digest of the model's weights or of the endpoint's model identity
	Tokenizer     string `json:"tokenizer"`     // name/version of the tokenizer
	Chunker       string `json:"chunker"`       // name/version of the chunker
}

// watermarkV2 is the source the index reflects.
type watermarkV2 struct {
	Events        int64             `json:"events"`
	Heads         map[string]headV2 `json:"heads"`
	WorkingMemory string            `json:"working_memory"` // digest of memory/working_memory.md
}

type headV2 struct {
	Seq int64  `json:"seq"`
	ID  string `json:"id"`
}

// chunkV2 is one indexed piece of text. Source is an event id, or the span
// [start, end) in bytes of the working memory.
type chunkV2 struct {
	Event  string    `json:"event,omitempty"`
	Span   *[2]int64 `json:"span,omitempty"`
	Text   string    `json:"text"`   // digest of the chunk's text
	Vector string    `json:"vector"` // base64 of dims values of dtype, little-endian
}
