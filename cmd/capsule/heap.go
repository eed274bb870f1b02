package main

import (
	"os"
	"runtime/debug"
)

// Soft limits on the Go heap of the commands whose work grows with the
// size of a capsule. What they keep is bounded by design; the limit makes
// the collector reclaim the garbage of the stream before the heap doubles,
// which keeps peak RSS under 100 MiB at a million files or events. The
// limit is soft: past it the heap grows as it must.
const (
	// streamingHeap is for the commands that stream a journal (log, log
	// verify, log merge, render): a few batches in flight and a dozen
	// bytes per event for the chain check or the render index.
	streamingHeap = 64 << 20
	// fileHeapLimit is for the commands whose memory grows with the number
	// of files (verify, export, import, checkout): a pointer-free digest
	// and size per blob, 40 bytes at most.
	fileHeapLimit = 60 << 20
)

// boundHeap sets limit as the soft heap limit unless GOMEMLIMIT chose one,
// and returns a function that restores the previous limit.
func boundHeap(limit int64) func() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}
