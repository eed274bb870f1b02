package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readDirStat lists dir with one open and an fstatat per entry.
func readDirStatOS(dir string) ([]fs.FileInfo, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(names))
	var serr error
	cerr := raw.Control(func(fd uintptr) {
		for _, n := range names {
			fi := &statInfo{name: n}
			err := ignoringEINTR(func() error {
				// syscall.Stat_t and unix.Stat_t both mirror the kernel's
				// struct stat, field for field.
				return unix.Fstatat(int(fd), n, (*unix.Stat_t)(unsafe.Pointer(&fi.st)), unix.AT_SYMLINK_NOFOLLOW)
			})
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				serr = &fs.PathError{Op: "lstat", Path: filepath.Join(dir, n), Err: err}
				return
			}
			out = append(out, fi)
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	if serr != nil {
		return nil, serr
	}
	return out, nil
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// statInfo is the fs.FileInfo of a struct stat, as os.Lstat fills it; its
// Sys is the *syscall.Stat_t.
type statInfo struct {
	name string
	st   syscall.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.st }

func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// The cast in readDirStatOS needs the two structs to be one size.
var _ [unsafe.Sizeof(syscall.Stat_t{}) - unsafe.Sizeof(unix.Stat_t{})]byte
var _ [unsafe.Sizeof(unix.Stat_t{}) - unsafe.Sizeof(syscall.Stat_t{})]byte
