package vfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// syncfsMin is the smallest batch OS.SyncFiles syncs with syncfs(2): below
// it, fsyncs of the files themselves cost less than writing back whatever
// else is dirty on the file system.
const syncfsMin = 32

// SyncFiles implements FileSyncer. A batch of syncfsMin files or more
// whose directories lie on one file system is made durable by one
// syncfs(2) of that file system (which writes back everything dirty on it,
// as sync(1) does, in one journal commit); a smaller batch, one that spans
// file systems, or a kernel before 5.8 (whose syncfs does not report
// write-back errors) gets an fsync per file, several at once. Like an
// fsync through a file opened after the writes, syncfs reports a
// write-back error that no other caller has reported yet.
func (OS) SyncFiles(names []string) error {
	if len(names) < syncfsMin || !syncfsReportsErrors() {
		return syncEach(OS{}, names)
	}
	one, err := oneFileSystem(names)
	if err != nil {
		return err
	}
	if !one {
		return syncEach(OS{}, names)
	}
	dir := filepath.Dir(names[0])
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	sc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: serr}
	}
	return nil
}

// oneFileSystem checks that every name is a regular file and reports
// whether all of them lie on one file system (device).
func oneFileSystem(names []string) (bool, error) {
	var dev uint64
	for i, name := range names {
		var st unix.Stat_t
		if err := unix.Stat(name, &st); err != nil {
			return false, &os.PathError{Op: "syncfiles", Path: name, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return false, &os.PathError{Op: "syncfiles", Path: name, Err: unix.EINVAL}
		}
		if i == 0 {
			dev = st.Dev
		} else if st.Dev != dev {
			return false, nil
		}
	}
	return true, nil
}

var syncfsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
})

// syncfsReportsErrors reports whether the running kernel's syncfs returns
// write-back errors (Linux 5.8 and later).
func syncfsReportsErrors() bool { return syncfsErrors() }

// kernelAtLeast reports whether a release string such as "6.1.0-13-amd64"
// is major.minor or later.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	digits := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(parts[1])
	}
	mi, err2 := strconv.Atoi(parts[1][:digits])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
