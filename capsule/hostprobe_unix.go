//go:build unix

package capsule

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/agentcapsule/capsule/vfs"
)

// tryShared takes a shared flock on f without waiting, so that probes of
// several processes never refuse each other, only a host's exclusive lock
// refuses them; it fails with vfs.ErrLocked while a host holds f. Files
// that are not OS files have no cross-process lock: it returns nil.
func tryShared(f vfs.File) error {
	of, ok := f.(*os.File)
	if !ok {
		return nil
	}
	err := unix.Flock(int(of.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return vfs.ErrLocked
	}
	return err
}
