package vfs

import (
	"errors"
	"os"
)

// ErrLocked is returned by TryLock for a file another open file holds
// locked: another process (or another open of it in this one) writes it.
var ErrLocked = errors.New("vfs: file is locked by another writer")

// Locker is an optional interface of a File: TryLock takes an exclusive
// advisory lock on the file without waiting, or fails with ErrLocked; the
// lock lasts until the file is closed.
type Locker interface {
	TryLock() error
}

// TryLock takes an exclusive advisory lock on f without waiting: flock on
// OS files where the system has it, Locker where f implements it. For
// other files it does nothing and returns nil (vfs.Mem lives in one
// process, where callers serialize themselves). A lock held through
// another open of the same file, in this process or another, makes it
// fail with ErrLocked.
func TryLock(f File) error {
	switch f := f.(type) {
	case Locker:
		return f.TryLock()
	case *os.File:
		return tryLock(f)
	}
	return nil
}

// TryLock implements Locker, subject to the rules for OpOpen, passing the
// call to the inner file.
func (ff *faultyFile) TryLock() error {
	return ff.run(OpOpen, func() error { return TryLock(ff.inner) })
}
