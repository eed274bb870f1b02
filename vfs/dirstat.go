package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// DirStater is an optional interface of an FS: ReadDirStat lists a
// directory, sorted by name, with the Lstat of each entry.
type DirStater interface {
	ReadDirStat(name string) ([]fs.FileInfo, error)
}

// ReadDirStat lists the directory name sorted by name, with each entry's
// Lstat. For OS on Linux it opens the directory once and stats each entry
// relative to it (fstatat), so no entry's path is resolved from the root
// again: recording a workspace of thousands of files at a move's freeze
// is mostly these stats. An FS that implements DirStater answers itself;
// any other FS is asked ReadDir and then Lstat of each entry. An entry
// removed between the listing and its stat is left out, as if the
// listing had been taken after it went.
func ReadDirStat(fsys FS, name string) ([]fs.FileInfo, error) {
	switch f := fsys.(type) {
	case DirStater:
		return f.ReadDirStat(name)
	case OS:
		return readDirStatOS(name)
	}
	return readDirLstat(fsys, name)
}

// readDirLstat is ReadDirStat by ReadDir and then Lstat of each entry.
func readDirLstat(fsys FS, name string) ([]fs.FileInfo, error) {
	ents, err := fsys.ReadDir(name)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := fsys.Lstat(filepath.Join(name, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	return out, nil
}

// ReadDirStat implements DirStater, subject to the rules for OpReadDir.
func (f *Faulty) ReadDirStat(name string) ([]fs.FileInfo, error) {
	var out []fs.FileInfo
	err := f.run(OpRecord{Op: OpReadDir, Path: name}, func() (err error) {
		out, err = ReadDirStat(f.inner, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
