package archive

import (
	"fmt"
	"strings"
)

// The layout of a capsule (FORMAT §1) as an archive may hold it (§8.1): the
// layout directories and files, the signature, blobs named by their
// lower-case hex digest, and journal quarantine files. Export writes nothing
// else, so anything else (a `.tmp-` file, a `.commit/` folder, any other
// name) is refused from its header, before a byte of it is written.
var (
	layoutDirs = map[string]bool{
		"memory": true, "memory/vector_index": true, "artifacts": true, blobsDir: true, "environment": true,
	}
	layoutFiles = map[string]bool{
		ManifestName: true, SignatureName: true, journalFile: true, "memory/working_memory.md": true,
		"memory/vector_index/index.json": true, "artifacts/snapshot.json": true, "environment/spec.json": true,
	}
)

const (
	blobsDir         = "artifacts/blobs"
	journalFile      = "memory/timeline_events.jsonl"
	quarantineSuffix = ".quarantine-"
)

// layoutProblem says why the clean name is not an entry the layout
// allows, or "".
func layoutProblem(name string, isDir bool) string {
	switch {
	case isDir && layoutDirs[name]:
		return ""
	case isDir:
		return "directory not in the layout (FORMAT §1)"
	case layoutFiles[name] || isBlobName(name) || isQuarantineName(name):
		return ""
	case layoutDirs[name]:
		return fmt.Sprintf("%s must be a directory (FORMAT §1)", name)
	}
	return "file not in the layout (FORMAT §1)"
}

// isBlobName reports whether name is artifacts/blobs/ and 64 lower-case hex
// digits.
func isBlobName(name string) bool {
	hex, ok := strings.CutPrefix(name, blobsDir+"/")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isQuarantineName reports whether name is a journal quarantine file,
// memory/timeline_events.jsonl.quarantine-<n> with n = 1, 2, 3, … (FORMAT §7.8).
func isQuarantineName(name string) bool {
	n, ok := strings.CutPrefix(name, journalFile+quarantineSuffix)
	if !ok || n == "" || n[0] == '0' || len(n) > 20 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}
