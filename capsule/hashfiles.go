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

// hashDone receives the result of hashing file i of a hashFiles call.
type hashDone func(i int, d digest.Digest, n int64, err error)

// hashFiles hashes every file of ts on w goroutines (w <= 0: one per CPU),
// reporting progress, and calls done once per file, from those goroutines
// at once, in no particular order. On the host's file system, with a CPU
// that hashes two messages at once (digest.Blocks2Native), each goroutine
// hashes two small files at a time in lockstep (hashfiles_linux.go): that
// halves the CPU time of the hashing, which is most of verify's work.
func hashFiles(fsys vfs.FS, ts []hashTarget, w int, p Progress, done hashDone) {
	if hashFilesHost(fsys, ts, workers(w), p, done) {
		return
	}
	par.Do(len(ts), workers(w), func(i int) {
		d, n, err := hashFile(fsys, ts[i].name, ts[i].size, p)
		done(i, d, n, err)
	})
}
