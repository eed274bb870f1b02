package schema

import "fmt"

// CheckIndex reports whether b is a memory index of version v as this
// release reads it: version 1's placeholder (an entries array) or version
// 2's derived index (FORMAT §11.7.2), decoded strictly. A reader calls it
// on a migrated index before it stages or uses it.
func CheckIndex(b []byte, v int) error {
	switch v {
	case 1:
		var s indexV1
		if err := decodeStrict(b, &s); err != nil {
			return err
		}
		if s.Version != 1 || s.Entries == nil {
			return fmt.Errorf("%w: memory index: want version 1 with an entries array", ErrInput)
		}
	case 2:
		var s indexV2
		if err := decodeStrict(b, &s); err != nil {
			return err
		}
		if s.Version != 2 || s.Chunks == nil {
			return fmt.Errorf("%w: memory index: want version 2 with a chunks array", ErrInput)
		}
		if (s.Embedder == nil) != (s.Watermark == nil) {
			return fmt.Errorf("%w: memory index: embedder and watermark are both set or both null", ErrInput)
		}
	default:
		return fmt.Errorf("%w: memory index version %d", ErrNoPath, v)
	}
	return nil
}

// StaleIndex is a version-2 memory index that reflects nothing yet: what a
// new capsule holds and what the up step makes of 0.1.0's placeholder.
const StaleIndex = "{\"version\":2,\"embedder\":null,\"watermark\":null,\"chunks\":[]}\n"
