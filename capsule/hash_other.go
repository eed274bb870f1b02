//go:build !linux

package capsule

import (
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// hashHost has no fast path off Linux: ok is always false and the caller
// reads the file through fsys.
func hashHost(vfs.FS, string, int64, Progress) (digest.Digest, int64, bool, error) {
	return "", 0, false, nil
}

// hashFilesHost has no fast path off Linux: hashFiles hashes one file at
// a time.
func hashFilesHost(vfs.FS, hashList, int, Progress, hashDone) bool { return false }
