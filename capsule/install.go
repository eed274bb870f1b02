package capsule

import (
	"fmt"
	"path/filepath"

	"github.com/agentcapsule/capsule/vfs"
)

// Install moves a complete capsule folder received into staging (for
// example by an import or a move) to dir, atomically: it completes any
// interrupted commit in staging, verifies it with opts (every problem makes
// it refuse, with a *VerifyError), and renames it into place only if dir is
// missing or empty (else ErrExists). staging and dir should be on the same
// file system; a crash leaves staging or dir, never a mix. It returns the
// installed capsule, opened with cfg.
func Install(fsys vfs.FS, staging, dir string, cfg Config, opts VerifyOptions) (*Capsule, error) {
	dir = filepath.Clean(dir)
	if err := recoverDir(fsys, staging); err != nil {
		return nil, fmt.Errorf("install %s: %w", dir, err)
	}
	r, err := Verify(fsys, staging, opts)
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", dir, err)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("install %s: %w", dir, err)
	}
	if err := checkEmptyTarget(fsys, dir); err != nil {
		return nil, fmt.Errorf("install %s: %w", dir, err)
	}
	if err := vfs.MkdirAllDurable(fsys, filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("install %s: %w", dir, err)
	}
	if err := moveInto(fsys, staging, dir); err != nil {
		return nil, fmt.Errorf("install %s: %w", dir, err)
	}
	return Open(fsys, dir, cfg)
}
