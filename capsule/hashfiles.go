package capsule

import (
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/vfs"
)

// hashTarget is one file for hashFiles: its path and its size if known
// (-1 if not).
type hashTarget struct {
	name string
	size int64
}

// hashList is the files of a hashFiles call: Len of them, Target(i) the
// i-th, or false when file i needs no hashing. It lets a caller with a
// compact table of a million blobs hand them out without building a slice
// of paths (verify's memory stays flat in the number of files).
type hashList interface {
	Len() int
	Target(i int) (hashTarget, bool)
}

// hashSlice is a hashList of files that all need hashing.
type hashSlice []hashTarget

// Len returns the number of files.
func (s hashSlice) Len() int { return len(s) }

// Target returns file i.
func (s hashSlice) Target(i int) (hashTarget, bool) { return s[i], true }

// hashDone receives the result of hashing file i of a hashFiles call.
type hashDone func(i int, d digest.Digest, n int64, err error)

// hashFiles hashes every file of ts that needs it on w goroutines (w <= 0: one per CPU),
// reporting progress, and calls done once per file, from those goroutines
// at once, in no particular order. On the host's file system, with a CPU
// that hashes two messages at once (digest.Blocks2Native), each goroutine
// hashes two small files at a time in lockstep (hashfiles_linux.go): that
// halves the CPU time of the hashing, which is most of verify's work.
func hashFiles(fsys vfs.FS, ts hashList, w int, p Progress, done hashDone) {
	if hashFilesHost(fsys, ts, workers(w), p, done) {
		return
	}
	par.Do(ts.Len(), workers(w), func(i int) {
		t, ok := ts.Target(i)
		if !ok {
			return
		}
		d, n, err := hashFile(fsys, t.name, t.size, p)
		done(i, d, n, err)
	})
}
