//go:build !linux

package archive

import "github.com/agentcapsule/capsule/vfs"

// syncFS reports that this system offers no file-system-wide sync: the
// caller syncs file by file.
func syncFS(vfs.FS, string) (bool, error) { return false, nil }
