// Package dirlist lists a directory a batch at a time, so a folder of a
// million entries (a capsule's blobs) costs memory for one batch, not for
// the whole listing. It may be imported by any package that reads folders
// through vfs.FS.
package dirlist

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/agentcapsule/capsule/vfs"
)

// batch is how many entries one read of the directory returns.
const batch = 1024

// Each calls fn for every entry of the directory name, in no particular
// order, and stops at fn's first error, which it returns. On the real file
// system (vfs.OS) it reads the directory a batch at a time; any other FS
// is asked ReadDir, which lists it whole (the in-memory and fault-injecting
// file systems of tests, whose rules apply as usual).
func Each(fsys vfs.FS, name string, fn func(fs.DirEntry) error) error {
	if _, real := fsys.(vfs.OS); !real {
		ents, err := fsys.ReadDir(name)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	return eachOS(name, fn)
}

func eachOS(name string, fn func(fs.DirEntry) error) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		ents, err := d.ReadDir(batch)
		for _, e := range ents {
			if ferr := fn(e); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
