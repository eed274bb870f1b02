package vfs_test

import (
	"testing"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

func TestOSConformance(t *testing.T) {
	vfstest.TestFS(t, func(t *testing.T) (vfs.FS, string) { return vfs.OS{}, t.TempDir() })
}

func TestMemConformance(t *testing.T) {
	vfstest.TestFS(t, func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "/" })
}

// TestMemConformanceSubdir runs the suite below a relative path, which Mem
// resolves against its root.
func TestMemConformanceSubdir(t *testing.T) {
	vfstest.TestFS(t, func(t *testing.T) (vfs.FS, string) {
		m := vfs.NewMem()
		if err := m.MkdirAll("work/dir", 0o755); err != nil {
			t.Fatal(err)
		}
		return m, "work/dir"
	})
}
