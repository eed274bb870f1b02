package archive

import "github.com/agentcapsule/capsule/vfs"

// Problem kinds this package reports itself; a Verifier adds its own.
const (
	KindArchive   = "archive"   // a tar-level problem: unsafe name, duplicate, limit, corrupt stream
	KindSignature = "signature" // manifest.json.sig is missing, malformed, or does not verify
)

// Problem is one thing wrong with a capsule or its archive. It has the shape
// of capsule.Problem so the command can convert between them field by field.
type Problem struct {
	Path   string `json:"path"`   // the entry or file, slash-separated; "" for the archive as a whole
	Kind   string `json:"kind"`   // what sort of problem
	Detail string `json:"detail"` // what exactly is wrong
}

// String renders p as one line: "path: kind: detail".
func (p Problem) String() string {
	path := p.Path
	if path == "" {
		path = "(archive)"
	}
	return path + ": " + p.Kind + ": " + p.Detail
}

// Verifier checks the capsule folder dir on fsys and returns every problem it
// finds. An error means the check itself could not run (an I/O failure), not
// that the capsule is bad. The command passes a wrapper of capsule.Verify.
type Verifier func(fsys vfs.FS, dir string) ([]Problem, error)

// Progress receives the number of content bytes an export or import has
// moved. *progress.Bar satisfies it; if it also has SetTotal(int64), export
// announces the total first.
type Progress interface {
	Add(n int64)
}

type totaler interface{ SetTotal(total int64) }
