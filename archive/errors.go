package archive

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers branch on. Errors about one entry come wrapped in
// an *EntryError that names it.
var (
	// ErrUnsafePath: an entry name is absolute, climbs with "..", is empty,
	// or holds a character the format forbids (FORMAT §9.1).
	ErrUnsafePath = errors.New("archive: unsafe path")
	// ErrEntryType: an entry is neither a regular file nor a directory
	// (symlink, hard link, device, fifo, sparse file, global header, …).
	ErrEntryType = errors.New("archive: entry type not allowed")
	// ErrDuplicate: two entries have the same name.
	ErrDuplicate = errors.New("archive: duplicate entry")
	// ErrCaseCollision: two entries have names that differ only by case.
	ErrCaseCollision = errors.New("archive: names differ only by case")
	// ErrConflict: an entry needs a parent directory where a file is.
	ErrConflict = errors.New("archive: file where a directory is needed")
	// ErrLayout: an entry's name is not one the capsule layout allows in an
	// archive (FORMAT §1, §9.1); it is refused from its header.
	ErrLayout = errors.New("archive: entry not in the capsule layout")
	// ErrLimit: an entry or the archive exceeds a configured limit.
	ErrLimit = errors.New("archive: limit exceeded")
	// ErrCorrupt: the stream is not a readable tar (or zstd) stream, or ends early.
	ErrCorrupt = errors.New("archive: corrupt or truncated stream")
	// ErrCompression: the stream uses a compression Capsule does not read.
	ErrCompression = errors.New("archive: unsupported compression")
	// ErrDestExists: the import destination exists and is not an empty directory.
	ErrDestExists = errors.New("archive: destination exists and is not empty")
	// ErrVerify: the unpacked capsule failed verification; see *VerifyError.
	ErrVerify = errors.New("archive: capsule failed verification")
	// ErrNoManifest: the folder to export has no manifest.json.
	ErrNoManifest = errors.New("archive: no manifest.json")
	// ErrChanged: a file changed size while it was being exported.
	ErrChanged = errors.New("archive: file changed during export")
	// ErrSource: the folder to export holds something that is not a regular
	// file or a directory.
	ErrSource = errors.New("archive: unexpected file type in capsule folder")
)

// EntryError names the entry an archive was refused for.
type EntryError struct {
	Index  int    // 0-based position of the entry in the archive
	Name   string // the name as written in the archive
	Err    error  // one of the sentinels above
	Detail string // what exactly is wrong
}

func (e *EntryError) Error() string {
	msg := fmt.Sprintf("%v: entry %d %q", e.Err, e.Index, clip(e.Name))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel.
func (e *EntryError) Unwrap() error { return e.Err }

// VerifyError carries the problems the verifier found in an unpacked capsule.
type VerifyError struct {
	Problems []Problem
}

func (e *VerifyError) Error() string {
	if len(e.Problems) == 0 {
		return ErrVerify.Error()
	}
	lines := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		lines = append(lines, p.String())
	}
	return fmt.Sprintf("%v: %d problem(s): %s", ErrVerify, len(e.Problems), strings.Join(lines, "; "))
}

// Unwrap returns ErrVerify.
func (e *VerifyError) Unwrap() error { return ErrVerify }

// clip shortens a hostile name for an error message.
func clip(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
