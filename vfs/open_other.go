//go:build !linux

package vfs

import (
	"io/fs"
	"os"
)

// openFile is os.OpenFile where the poller's cost on open has not been
// measured (open_linux.go).
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
