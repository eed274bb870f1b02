package schema

import "fmt"

func init() {
	register(Step{Kind: Journal, From: 2, To: 1, Apply: journal2to1,
		Summary: "a line reads as version 1 unchanged (0.1.0 keeps newer lines byte for byte); a tool_dispatch, approval_request, approval, effect_outcome or tool_mapping is refused"})
}

// journal2to1 gives a release that reads version 1 a version-2 journal's
// line: the same bytes, because 0.1.0 keeps a line of a newer envelope
// version byte for byte and verifies it by chain (FORMAT §7.5), and skips it
// when rendering. A line of a kind version 2 adds is refused: a reader that
// skips an approval request, a dispatch or its outcome could run a call
// twice or without its approval, so such an agent must not be moved to, or
// rolled back onto, a release that does not know them.
func journal2to1(b []byte) ([]byte, error) {
	h, err := readLineHead(b)
	if err != nil {
		return nil, err
	}
	if h.V > 2 {
		return nil, fmt.Errorf("%w: line %s has v %d, want at most 2", ErrInput, h.ID, h.V)
	}
	if journalV2Kinds[h.Kind] {
		return nil, fmt.Errorf("%w: line %s is a %s event, which journal version 1 does not know", ErrNotExpressible, h.ID, h.Kind)
	}
	return append([]byte(nil), b...), nil
}
