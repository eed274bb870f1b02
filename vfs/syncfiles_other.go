//go:build !linux

package vfs

// SyncFiles implements FileSyncer with an fsync per file, several at once.
func (OS) SyncFiles(names []string) error { return syncEach(OS{}, names) }
