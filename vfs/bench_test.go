package vfs_test

import (
	"fmt"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// BenchmarkWriteFile compares an atomic, durable write on Mem with the same
// write on the host file system (temp file, fsync, rename, fsync of the
// directory), for a small and a large file. Run with
// go test ./vfs -run '^$' -bench WriteFile.
func BenchmarkWriteFile(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		data := make([]byte, size)
		for _, tc := range []struct {
			name string
			fsys vfs.FS
			dir  string
		}{{"Mem", vfs.NewMem(), "/"}, {"OS", vfs.OS{}, b.TempDir()}} {
			b.Run(fmt.Sprintf("%s/%dKiB", tc.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					if err := vfs.WriteFile(tc.fsys, tc.dir+"/f", data, 0o644); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMemCrash measures Crash on a tree of 1,000 synced 4 KiB files.
func BenchmarkMemCrash(b *testing.B) {
	m := vfs.NewMem()
	for i := range 1000 {
		dir := fmt.Sprintf("/d%d", i%10)
		if err := m.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := vfs.WriteFile(m, fmt.Sprintf("%s/f%d", dir, i), make([]byte, 4096), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	m.SyncAll()
	for b.Loop() {
		m.Crash()
	}
}
