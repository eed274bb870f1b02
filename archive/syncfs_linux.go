package archive

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/agentcapsule/capsule/vfs"
)

// syncFS makes everything written to the file system holding dir durable
// with one syncfs(2), when fsys is the real file system; ok is false when
// it cannot (the caller then syncs file by file). One syncfs costs about
// one fsync however many files an import wrote, where an fsync per file
// cost a journal commit per few files.
func syncFS(fsys vfs.FS, dir string) (ok bool, err error) {
	if _, real := fsys.(vfs.OS); !real {
		return false, nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return true, err
	}
	defer d.Close()
	sc, err := d.SyscallConn()
	if err != nil {
		return true, err
	}
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return true, err
	}
	if serr != nil {
		return true, &os.PathError{Op: "syncfs", Path: dir, Err: serr}
	}
	return true, nil
}
