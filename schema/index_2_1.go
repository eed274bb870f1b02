package schema

import "fmt"

func init() {
	register(Step{Kind: MemoryIndex, From: 2, To: 1, Apply: index2to1, Destructive: true,
		Summary: "any version-2 index becomes 0.1.0's empty placeholder; the chunks are derived and rebuilt after an upgrade"})
}

// index2to1 gives release 0.1.0 the placeholder it wrote itself. The
// version-2 chunks are derived data that 0.1.0 never reads; a later upgrade
// finds a stale index and rebuilds it.
func index2to1(b []byte) ([]byte, error) {
	var s indexV2
	if err := decodeStrict(b, &s); err != nil {
		return nil, err
	}
	if s.Version != 2 || s.Chunks == nil {
		return nil, fmt.Errorf("%w: want version 2 with a chunks array", ErrInput)
	}
	return []byte(emptyIndexV1), nil
}
