package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/vfs"
)

// Each streams the complete events of the journal at path to visit, in
// file order, without changing the file and without holding it: a torn
// final line (no newline yet) is left out, and Each returns the length of
// the whole lines it read. A missing journal has no events. The lines are
// checked as journal.Each checks them; the event's Body aliases a buffer
// reused once visit returns. It replaces reading the file whole and
// journal.Decode of it.
func Each(fsys vfs.FS, path string, visit func(e *journal.Event, pos journal.Pos) error) (int64, error) {
	if fsys == nil {
		fsys = vfs.OS{}
	}
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	size, err := wholeLines(f)
	if err != nil {
		return 0, fmt.Errorf("read journal %s: %w", path, err)
	}
	if err := journal.Each(io.NewSectionReader(f, 0, size), visit); err != nil {
		return 0, fmt.Errorf("read journal %s: %w", path, err)
	}
	return size, nil
}

// wholeLines returns the length of f up to and including its last newline,
// reading backwards from the end in small pieces.
func wholeLines(f vfs.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := info.Size()
	buf := make([]byte, 64<<10)
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}
