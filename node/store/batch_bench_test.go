package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// BenchmarkDiskSync measures what the frozen window is made of on this
// disk: one file fsync, one directory fsync, and a batch of 16 file
// fsyncs issued together (Batch's way) against one after another.
func BenchmarkDiskSync(b *testing.B) {
	dir := b.TempDir()
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 4096), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("file", func(b *testing.B) {
		for i := range b.N {
			write(fmt.Sprint("f", i))
			if err := SyncFile(vfs.OS{}, filepath.Join(dir, fmt.Sprint("f", i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dir", func(b *testing.B) {
		for i := range b.N {
			write(fmt.Sprint("d", i))
			if err := (vfs.OS{}).SyncDir(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, batched := range []bool{false, true} {
		b.Run(fmt.Sprintf("16files/batched=%v", batched), func(b *testing.B) {
			for i := range b.N {
				var sb Batch
				for k := range 16 {
					name := fmt.Sprintf("b%d-%d", i, k)
					write(name)
					sb.File(filepath.Join(dir, name))
				}
				if !batched {
					for _, f := range sb.files {
						if err := SyncFile(vfs.OS{}, f); err != nil {
							b.Fatal(err)
						}
					}
					continue
				}
				if err := sb.Flush(vfs.OS{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
