//go:build unix

package vfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func tryLock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case errors.Is(err, unix.EWOULDBLOCK):
		return fmt.Errorf("%w: %s", ErrLocked, f.Name())
	case err != nil:
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}
