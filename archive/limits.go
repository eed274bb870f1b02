package archive

// Default limits of an import (docs/FORMAT.md §9.3).
const (
	DefaultMaxTotal     int64  = 16 << 30  // 16 GiB of entry contents
	DefaultMaxEntries          = 4_000_000 // entries of any type
	DefaultMaxPathLen          = 1024      // bytes of an entry name
	DefaultMaxWindow    uint64 = 32 << 20  // zstd window the decoder accepts
	maxComponentLen            = 255       // bytes of one name component
	headerAllowance     int64  = 3 << 10   // tar stream bytes allowed per entry beyond its contents
	streamAllowanceBase int64  = 1 << 20   // tar stream bytes allowed beyond the per-entry ones
)

// Limits bound what an import may write. A zero field takes its default.
type Limits struct {
	// MaxTotal bounds the sum of the sizes of all entries, and (with a small
	// allowance per entry for headers) the bytes of the decompressed stream.
	MaxTotal int64
	// MaxEntries bounds the number of entries, directories included.
	MaxEntries int
	// MaxEntrySize bounds the size of one entry; it defaults to MaxTotal.
	MaxEntrySize int64
	// MaxPathLen bounds the length in bytes of an entry's name.
	MaxPathLen int
	// MaxWindow bounds the window a zstd frame may ask the decoder for,
	// which bounds the decoder's memory.
	MaxWindow uint64
}

// withDefaults returns l with every zero field replaced by its default.
func (l Limits) withDefaults() Limits {
	if l.MaxTotal <= 0 {
		l.MaxTotal = DefaultMaxTotal
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxEntrySize <= 0 || l.MaxEntrySize > l.MaxTotal {
		l.MaxEntrySize = l.MaxTotal
	}
	if l.MaxPathLen <= 0 {
		l.MaxPathLen = DefaultMaxPathLen
	}
	if l.MaxWindow == 0 {
		l.MaxWindow = DefaultMaxWindow
	}
	return l
}

// maxStream is the most decompressed bytes an archive within l may take:
// the contents, plus headers and padding for every entry, plus slack.
func (l Limits) maxStream() int64 {
	n := l.MaxTotal + int64(l.MaxEntries)*headerAllowance + streamAllowanceBase
	if n < l.MaxTotal { // overflow
		return 1<<63 - 1
	}
	return n
}
