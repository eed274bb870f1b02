//go:build !linux

package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// readDirStatOS is ReadDir and Lstat where fstatat is not used.
func readDirStatOS(dir string) ([]fs.FileInfo, error) {
	ents, err := OS{}.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := OS{}.Lstat(filepath.Join(dir, e.Name()))
		if err == nil {
			out = append(out, fi)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return out, nil
}
