package schema

import "fmt"

func init() {
	register(Step{Kind: Journal, From: 1, To: 2, Apply: journal1to2,
		Summary: "a version-1 line reads as version 2 unchanged (version 2 adds kinds only); a version-2 kind in a version-1 line is refused"})
}

// journal1to2 reads a version-1 journal line as version 2: the same bytes,
// since version 2 keeps the envelope and every version-1 body and only adds
// kinds. A version-1 line of a kind version 2 adds is refused: 0.1.0 kept
// such a line as an unknown kind, and honouring it now would let a line
// written without those rules (an approval nobody checked) grant authority.
func journal1to2(b []byte) ([]byte, error) {
	h, err := readLineHead(b)
	if err != nil {
		return nil, err
	}
	if h.V != 1 {
		return nil, fmt.Errorf("%w: line %s has v %d, want 1", ErrInput, h.ID, h.V)
	}
	if journalV2Kinds[h.Kind] {
		return nil, fmt.Errorf("%w: line %s is a version-1 %s event; version 1 cannot grant what it records", ErrNotExpressible, h.ID, h.Kind)
	}
	return append([]byte(nil), b...), nil
}
