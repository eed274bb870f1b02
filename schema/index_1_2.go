package schema

import (
	"encoding/json"
	"fmt"
)

func init() {
	register(Step{Kind: MemoryIndex, From: 1, To: 2, Apply: index1to2, Destructive: true,
		Summary: "the placeholder becomes a stale version-2 index (no embedder, no watermark, no chunks), rebuilt from the journal on open"})
}

// index1to2 migrates the version-1 placeholder to a stale version-2 index.
// Version-1 entries have no embedder fingerprint, so no reader could tell
// what space their vectors are in: they are dropped, never carried into an
// index that claims an embedder. 0.1.0 wrote none, and the index is derived
// (rebuilt from the journal and the working memory), so nothing is lost
// that a rebuild does not give back; the step is marked destructive anyway
// so that the original bytes are kept (FORMAT §11.5).
func index1to2(b []byte) ([]byte, error) {
	var s indexV1
	if err := decodeStrict(b, &s); err != nil {
		return nil, err
	}
	if s.Version != 1 || s.Entries == nil {
		return nil, fmt.Errorf("%w: want version 1 with an entries array", ErrInput)
	}
	out, err := json.Marshal(indexV2{Version: 2, Chunks: []chunkV2{}})
	if err != nil {
		return nil, fmt.Errorf("schema: encode: %w", err)
	}
	return append(out, '\n'), nil
}
