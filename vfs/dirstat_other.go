//go:build !linux

package vfs

import "io/fs"

// readDirStatOS is ReadDir and Lstat where fstatat is not used.
func readDirStatOS(dir string) ([]fs.FileInfo, error) { return readDirLstat(OS{}, dir) }
