// Package vfs is the file system seen by every package that touches disk.
//
// FS is implemented by OS (the real file system) and by Mem, an in-memory twin
// that remembers which bytes and directory entries were made durable and can
// simulate a crash in which each change not yet durable survives or not.
// Faulty wraps any FS to inject errors (ENOSPC, EIO) on a named operation
// and path. Package vfs/vfstest holds the conformance suite every FS passes
// and ForEachCrashPoint, which crashes a Mem before each durable step of an
// operation, in every outcome of its unsynced changes (or, when there are
// too many, in both outcomes of each change and a seeded sample).
//
// # The crash model
//
// Code that uses an FS may rely on what POSIX and Linux promise and on
// nothing more:
//   - File.Sync (fsync) makes a file's contents durable, not its name.
//     SyncFiles does the same for a batch of files at once (on Linux, one
//     syncfs(2) for a large batch), and promises no more.
//   - SyncDir (fsync of the directory) makes the directory's entries durable:
//     the files created, removed and renamed in it.
//   - Rename is atomic: after a crash the new name shows the old node or
//     the moved one, never nothing, and the moved node is not under both
//     names (ext4, XFS and btrfs journal a rename as one change).
//   - Anything not synced may or may not survive, independently of other
//     unsynced changes: a rename, a creation or a removal can become durable
//     on its own before SyncDir (ext4 commits its journal every few seconds),
//     and an unsynced append may survive in part.
//
// ext4 with the default data=ordered promises somewhat more: it commits
// metadata changes in order, so a crash keeps a prefix of them, and a file
// fsync commits every earlier metadata change as well. Mem does not model
// that order: it may keep a later unsynced change and lose an earlier one in
// another directory, as file systems with per-file logs (btrfs's fsync log)
// can. Every set of directory entries ext4 can leave is among Mem's
// outcomes; of the ways an append can tear, Mem shows one (half the new
// bytes kept), which is enough to exercise a reader's torn-tail handling.
// It follows that code must sync a directory before a step whose safety
// depends on the entries in it, and must not move into place, before its
// commit point is durable, anything that recovery would roll back.
//
// The pure packages (digest, manifest, journal, render, transfer) never import
// vfs; the capsule, node and command packages do.
package vfs

import (
	"io"
	"io/fs"
)

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Seeker
	io.Closer
	// Sync makes the file's data durable.
	Sync() error
	// Stat describes the open file.
	Stat() (fs.FileInfo, error)
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Name returns the path the file was opened with.
	Name() string
}

// FS is a hierarchical file system with explicit durability.
//
// Creating, renaming and removing a directory entry are durable only after
// SyncDir of the directory that holds the entry; file contents are durable
// only after File.Sync. Paths use the host's separator; relative paths are
// relative to the process's working directory for OS and to the root for Mem.
type FS interface {
	// OpenFile opens name with the flags of os.OpenFile (O_RDONLY, O_WRONLY,
	// O_RDWR, O_CREATE, O_EXCL, O_TRUNC, O_APPEND).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Open opens name for reading.
	Open(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes name and everything below it; a missing name is no error.
	RemoveAll(name string) error
	// Rename atomically replaces newname with oldname, as rename(2) does:
	// a file replaces a file, a directory replaces an empty directory.
	Rename(oldname, newname string) error
	// Mkdir creates a directory.
	Mkdir(name string, perm fs.FileMode) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(name string, perm fs.FileMode) error
	// ReadDir lists a directory sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Stat follows symbolic links.
	Stat(name string) (fs.FileInfo, error)
	// Lstat does not follow a final symbolic link.
	Lstat(name string) (fs.FileInfo, error)
	// Symlink creates newname as a symbolic link to oldname.
	Symlink(oldname, newname string) error
	// Readlink returns the target of a symbolic link.
	Readlink(name string) (string, error)
	// Chmod changes the mode bits of name.
	Chmod(name string, mode fs.FileMode) error
	// SyncDir makes the entries of directory name durable.
	SyncDir(name string) error
}
