package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentcapsule/capsule/schema"
)

// Version is the memory index schema version this package reads and
// writes (FORMAT §11.7.2).
const Version = 2

// The file's shape, member for member as schema.indexV2 freezes it.
type fileIndex struct {
	Version   int            `json:"version"`
	Embedder  *fileEmbedder  `json:"embedder"`
	Watermark *fileWatermark `json:"watermark"`
	Chunks    []fileChunk    `json:"chunks"`
}

type fileEmbedder struct {
	Fingerprint   string `json:"fingerprint"`
	Name          string `json:"name"`
	Dims          int    `json:"dims"`
	DType         string `json:"dtype"`
	Normalization string `json:"normalization"`
	Model         string `json:"model"`
	Tokenizer     string `json:"tokenizer"`
	Chunker       string `json:"chunker"`
}

type fileWatermark struct {
	Events        int64           `json:"events"`
	Heads         map[string]Head `json:"heads"`
	WorkingMemory string          `json:"working_memory"`
}

type fileChunk struct {
	Event  string    `json:"event,omitempty"`
	Span   *[2]int64 `json:"span,omitempty"`
	Text   string    `json:"text"`
	Vector string    `json:"vector"`
}

// Encode returns the bytes of memory/vector_index/index.json for x: compact
// JSON (encoding/json's form, members in the order of FORMAT §11.7.2, map
// keys sorted) and a newline, chunks in file order. The same index gives
// the same bytes.
func (x *Index) Encode() ([]byte, error) {
	m := x.meta
	head, err := json.Marshal(fileIndex{Version: Version,
		Embedder: &fileEmbedder{Fingerprint: x.fp, Name: m.Name, Dims: m.Dims, DType: m.DType,
			Normalization: m.Normalization, Model: m.Model, Tokenizer: m.Tokenizer, Chunker: m.Chunker},
		Watermark: &fileWatermark{Events: x.wm.Events, Heads: x.wm.Heads, WorkingMemory: x.wm.WorkingMemory},
		Chunks:    []fileChunk{}})
	if err != nil {
		return nil, fmt.Errorf("memory: encode index: %w", err)
	}
	head = bytes.TrimSuffix(head, []byte("[]}"))
	out := make([]byte, 0, len(head)+x.live*(120+x.vec.dims*3/2))
	out = append(out, head...)
	out = append(out, '[')
	for n, i := range x.sorted() {
		if n > 0 {
			out = append(out, ',')
		}
		out = x.appendChunk(out, i)
	}
	return append(out, "]}\n"...), nil
}

// appendChunk writes one chunk as encoding/json would: every string in it
// is a digest or base64, which need no escape; an event id that would is
// written through encoding/json.
func (x *Index) appendChunk(out []byte, i int) []byte {
	d := &x.docs[i]
	out = append(out, '{')
	if d.Event != "" {
		out = append(out, `"event":`...)
		out = appendString(out, d.Event)
		out = append(out, ',')
	}
	if d.HasSpan {
		out = append(out, `"span":[`...)
		out = strconv.AppendInt(out, d.Span[0], 10)
		out = append(out, ',')
		out = strconv.AppendInt(out, d.Span[1], 10)
		out = append(out, "],"...)
	}
	out = append(out, `"text":"`...)
	out = append(out, d.digest...)
	out = append(out, `","vector":"`...)
	out = x.vec.appendStored(out, i)
	return append(out, `"}`...)
}

func appendString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// decode reads index.json bytes at version 2 (an older version arrives
// through schema.Up) into an index without texts, whose chunks and
// vectors Refresh may reuse. A stale index (no embedder) decodes to nil;
// anything malformed is an error, which the caller treats as no index.
func decode(b []byte) (*Index, error) {
	// One strict pass, with schema.CheckIndex's rules: the frozen members
	// only, version 2, a chunks array, embedder and watermark both set or
	// both null (a test holds the two to the same verdicts).
	var f fileIndex
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("memory: index: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("memory: index: data after the index")
	}
	switch {
	case f.Version != Version || f.Chunks == nil:
		return nil, fmt.Errorf("memory: index: want version 2 with a chunks array")
	case (f.Embedder == nil) != (f.Watermark == nil):
		return nil, fmt.Errorf("memory: index: embedder and watermark are both set or both null")
	case f.Embedder == nil:
		return nil, nil
	}
	meta := schema.Embedder{Name: f.Embedder.Name, Dims: f.Embedder.Dims, DType: f.Embedder.DType,
		Normalization: f.Embedder.Normalization, Model: f.Embedder.Model, Tokenizer: f.Embedder.Tokenizer, Chunker: f.Embedder.Chunker}
	fp, err := meta.Fingerprint()
	if err != nil {
		return nil, fmt.Errorf("memory: index: %w", err)
	}
	if fp != f.Embedder.Fingerprint {
		return nil, fmt.Errorf("memory: index: the fingerprint %s is not that of its embedder object (%s)", short(f.Embedder.Fingerprint), short(fp))
	}
	w := Watermark{Events: f.Watermark.Events, Heads: f.Watermark.Heads, WorkingMemory: f.Watermark.WorkingMemory}
	x := newIndex(meta, fp, w, len(f.Chunks))
	x.bm = nil // a decoded index has no texts: only Refresh searches them
	for n, c := range f.Chunks {
		ch := Chunk{Event: c.Event}
		if c.Span != nil {
			ch.Span, ch.HasSpan = *c.Span, true
		}
		if ch.Event == "" && !ch.HasSpan {
			return nil, fmt.Errorf("memory: index: chunk %d has no source", n)
		}
		if _, dup := x.byKey[ch.key()]; dup {
			return nil, fmt.Errorf("memory: index: chunk %d repeats the source %s", n, sourceString(ch.Event, c.Span))
		}
		if err := x.vec.addStored(c.Vector); err != nil {
			return nil, fmt.Errorf("memory: index: chunk %d: %w", n, err)
		}
		x.appendDoc(ch, c.Text)
	}
	return x, nil
}
