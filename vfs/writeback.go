package vfs

import "os"

// Writebacker is an optional interface of a File. StartWriteback asks the
// file system to begin writing the file's dirty data to disk and returns
// without waiting, so that a later Sync finds less to write. It makes
// nothing durable: only Sync does. A writer that calls it right after
// writing a file, and syncs many files together later, lets the disk work
// while the CPU goes on with the next file.
type Writebacker interface {
	StartWriteback() error
}

// StartWriteback starts writing back f's dirty data when f's FS can
// (OS files on Linux: sync_file_range with SYNC_FILE_RANGE_WRITE; files
// implementing Writebacker) and does nothing otherwise. Its error is
// advisory: a caller may ignore it, since the Sync that must follow reports
// any real failure.
func StartWriteback(f File) error {
	switch f := f.(type) {
	case Writebacker:
		return f.StartWriteback()
	case *os.File:
		return startWriteback(f)
	}
	return nil
}

// StartWriteback implements Writebacker. A Mem has no disk to write to:
// it only reports a closed or crashed handle.
func (f *memFile) StartWriteback() error {
	if err := f.lock("writeback"); err != nil {
		return err
	}
	f.unlock()
	return nil
}

// StartWriteback implements Writebacker, subject to the rules for
// OpWriteback, passing the call to the inner file.
func (ff *faultyFile) StartWriteback() error {
	return ff.run(OpWriteback, func() error { return StartWriteback(ff.inner) })
}
