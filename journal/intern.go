package journal

import (
	"crypto/sha256"
	"hash"
	"strings"
)

// interner saves allocations while one reader parses many lines: it shares
// machine names, shares each machine's last id with the next event's prev,
// reuses one hash, and, in block mode, puts the ids, prevs and times of a
// whole batch into one string instead of two or three per event. A nil
// interner shares nothing.
type interner struct {
	machines map[string]string
	recent   []string          // the first few machines, checked before the map
	last     map[string]string // machine -> id of its last event (string mode)
	hash     hash.Hash

	blocks  bool
	block   strings.Builder // the batch's ids, prevs and times, back to back
	lastOff []lastID        // the last id in block of the first few machines
	lastMap map[string]int  // and of the others, if there are more
	patches []patch         // strings of the line being parsed, to set later
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

// maxRecent is how many machine names an interner checks before its map: a
// journal has few machines, and comparing a name to a few is faster than
// hashing it.
const maxRecent = 8

// newInterner returns an interner; in block mode, lines is the number of
// lines expected, to size the block.
func newInterner(blocks bool, lines int) *interner {
	in := &interner{machines: map[string]string{}, last: map[string]string{}, hash: sha256.New(), blocks: blocks}
	if blocks {
		in.block.Grow(lines * (71 + 32))
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
		for _, s := range in.recent {
			if sameName(s, b) {
				return s
			}
		}
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
		if len(in.recent) < maxRecent {
			in.recent = append(in.recent, s)
		}
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
	off := in.block.Len()
	in.block.Write(b)
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
	if off := in.lastIDOf(e.Machine); off >= 0 && in.block.String()[off:off+len(prev)] == string(prev) {
		in.patches = append(in.patches, patch{field: fieldPrev, off: int32(off), n: int32(len(prev))})
		return true
	}
	if !validHex(prev[7:]) {
		return false
	}
	in.set(e, fieldPrev, prev)
	return true
}

// lastID is where the last id of a machine sits in the block.
type lastID struct {
	machine string
	off     int
}

// lastIDOf returns the offset in the block of machine's last id, or -1. A
// batch has few machines, so a short list beats a map.
func (in *interner) lastIDOf(machine string) int {
	for _, l := range in.lastOff {
		if sameName(l.machine, machine) {
			return l.off
		}
	}
	if off, ok := in.lastMap[machine]; ok {
		return off
	}
	return -1
}

// setLastID records off as the offset of machine's last id.
func (in *interner) setLastID(machine string, off int) {
	for i := range in.lastOff {
		if sameName(in.lastOff[i].machine, machine) {
			in.lastOff[i].off = off
			return
		}
	}
	if len(in.lastOff) < maxRecent {
		in.lastOff = append(in.lastOff, lastID{machine, off})
		return
	}
	if in.lastMap == nil {
		in.lastMap = map[string]int{}
	}
	in.lastMap[machine] = off
}

// sameName reports whether two machine names are equal, testing their
// last bytes first: names differ there more often than not (random or
// numbered), which spares most calls to compare memory.
func sameName[T string | []byte](a string, b T) bool {
	return len(a) == len(b) && (len(a) == 0 || a[len(a)-1] == b[len(b)-1]) && a == string(b)
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

// take returns the patches of the line just parsed and starts the next,
// reusing their buffer: the caller must copy them before the next set.
func (in *interner) take() []patch {
	p := in.patches
	in.patches = in.patches[:0]
	return p
}

// finish sets the patched fields to pieces of the block, which a
// strings.Builder turns into one string without copying it.
func (in *interner) finish(events []Event, owners []int32, patches []patch) {
	s := in.block.String()
	for i, p := range patches {
		*fieldOf(&events[owners[i]], p.field) = s[p.off : p.off+p.n]
	}
}
