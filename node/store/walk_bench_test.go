package store

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/vfs"
)

// BenchmarkRecordWork records a workspace of 1,024 files in 64 folders
// that the stat cache vouches for (the freeze of a move whose pre-copy
// saw everything): the cost is listing and stating every file. In the same
// run it times the same walk through ReadDir and a path Lstat per file
// (how the walk stated files before vfs.ReadDirStat) and GNU find printing
// each file's size, time and inode (the comparator: one lstat per file).
//
//	go test ./node/store -run '^$' -bench RecordWork
func BenchmarkRecordWork(b *testing.B) {
	ws := filepath.Join(b.TempDir(), "ws")
	old := time.Now().Add(-time.Hour)
	for i := range 1024 {
		p := filepath.Join(ws, "big", fmt.Sprintf("d%02d", i%64), fmt.Sprintf("f%05d.bin", i))
		if err := writeHostFile(p, randomBytes(uint64(i), 4<<10)); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	run := func(b *testing.B, fsys vfs.FS) {
		var c StatCache
		if _, err := RecordWork(fsys, ws, &c, time.Now); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			rec, err := RecordWork(fsys, ws, &c, time.Now)
			if err != nil {
				b.Fatal(err)
			}
			if len(rec.Snap.Entries) != 1024 {
				b.Fatalf("%d entries", len(rec.Snap.Entries))
			}
		}
	}
	b.Run("readdirstat", func(b *testing.B) { run(b, vfs.OS{}) })
	b.Run("readdir+lstat", func(b *testing.B) { run(b, hiddenOS{vfs.OS{}}) })
	b.Run("find", func(b *testing.B) {
		if _, err := exec.LookPath("find"); err != nil {
			b.Skip("no find")
		}
		for b.Loop() {
			if err := exec.Command("find", ws, "-type", "f", "-printf", "%s %T@ %i\n").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// hiddenOS is vfs.OS behind another type: vfs.ReadDirStat takes its
// generic path (ReadDir, then Lstat by path).
type hiddenOS struct{ vfs.FS }
