package journal

import (
	"crypto/sha256"
	"hash"
)

// interner saves allocations while one reader parses many lines: it shares
// machine names, shares each machine's last id with the next event's prev,
// reuses one hash, and, in block mode, puts the ids, prevs and times of a
// whole batch into one string instead of two or three per event. A nil
// interner shares nothing.
type interner struct {
	machines map[string]string
	last     map[string]string // machine -> id of its last event (string mode)
	hash     hash.Hash

	blocks  bool
	block   []byte         // the batch's ids, prevs and times, back to back
	lastOff map[string]int // machine -> offset of its last id in block
	patches []patch        // strings of the line being parsed, to set later
}

// patch is a string field of an event that lives at block[off:off+n].
type patch struct {
	field  uint8 // fieldID, fieldPrev or fieldTime
	off, n int32
}

const (
	fieldID = iota
	fieldPrev
	fieldTime
)

// newInterner returns an interner; in block mode, lines is the number of
// lines expected, to size the block.
func newInterner(blocks bool, lines int) *interner {
	in := &interner{machines: map[string]string{}, last: map[string]string{}, hash: sha256.New(), blocks: blocks}
	if blocks {
		in.lastOff = map[string]int{}
		in.block = make([]byte, 0, lines*(71+32))
		in.patches = make([]patch, 0, 4)
	}
	return in
}

// hasher returns a reset sha256 hash, reused across lines.
func (in *interner) hasher() hash.Hash {
	if in == nil {
		return sha256.New()
	}
	in.hash.Reset()
	return in.hash
}

// machine returns the machine name b, checked (checkMachine), or "" when it
// is not a valid name. Names are checked and allocated once per interner.
func (in *interner) machine(b []byte) string {
	if in != nil {
		if s, ok := in.machines[string(b)]; ok {
			return s
		}
	}
	s := string(b)
	if checkMachine(s) != nil {
		return ""
	}
	if in != nil {
		in.machines[s] = s
	}
	return s
}

// prevOf returns a function giving the prev string of machine's next event,
// sharing the last id's string when equal.
func (in *interner) prevOf(machine string) func([]byte) string {
	return func(b []byte) string {
		if in != nil {
			if s := in.last[machine]; s == string(b) {
				return s
			}
		}
		return string(b)
	}
}

func (in *interner) saw(e *Event) {
	if in != nil {
		in.last[e.Machine] = e.ID
	}
}

// set stores b in a string field of e: now, or in block mode as a patch
// that finish applies. It returns the offset of b in the block (or -1).
func (in *interner) set(e *Event, field uint8, b []byte) int {
	if in == nil || !in.blocks {
		*fieldOf(e, field) = string(b)
		return -1
	}
	off := len(in.block)
	in.block = append(in.block, b...)
	in.patches = append(in.patches, patch{field: field, off: int32(off), n: int32(len(b))})
	return off
}

// setPrev stores prev (a "sha256:" digest whose form the caller checked
// but for its hex digits) in e.Prev, sharing the machine's last id when
// equal. It reports false when the digits are not lowercase hex.
func (in *interner) setPrev(e *Event, prev []byte) bool {
	if in == nil || !in.blocks {
		if in != nil && in.last[e.Machine] == string(prev) {
			e.Prev = in.last[e.Machine]
			return true
		}
		if !validHex(prev[7:]) {
			return false
		}
		e.Prev = string(prev)
		return true
	}
	if off, ok := in.lastOff[e.Machine]; ok && string(in.block[off:off+len(prev)]) == string(prev) {
		in.patches = append(in.patches, patch{field: fieldPrev, off: int32(off), n: int32(len(prev))})
		return true
	}
	if !validHex(prev[7:]) {
		return false
	}
	in.set(e, fieldPrev, prev)
	return true
}

func fieldOf(e *Event, field uint8) *string {
	switch field {
	case fieldID:
		return &e.ID
	case fieldPrev:
		return &e.Prev
	}
	return &e.Time
}

// take returns the patches of the line just parsed and starts the next.
func (in *interner) take() []patch {
	p := in.patches
	in.patches = in.patches[len(in.patches):]
	return p
}

// finish turns the block into one string and sets the patched fields.
func (in *interner) finish(events []Event, owners []int32, patches []patch) {
	s := string(in.block)
	for i, p := range patches {
		*fieldOf(&events[owners[i]], p.field) = s[p.off : p.off+p.n]
	}
}
