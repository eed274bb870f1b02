package archive

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Temporary names (an export's output file, an import's staging folder)
// carry the PID of the process that made them: "<stem>p<pid>-<12 hex>". A
// later run removes one only when it can prove it stale: the PID names no
// running process, or names this process and the name is not in use here
// (left by an operation of this process that ended without cleaning up).
// A name without a PID, or whose process runs, is never removed.

// inUse holds the temporary names operations of this process are using.
var inUse sync.Map

// claim marks name in use until the returned function is called.
func claim(name string) func() {
	inUse.Store(name, true)
	return func() { inUse.Delete(name) }
}

// ownedName returns stem + "p<pid>-" + hex.
func ownedName(stem, hex string) string {
	return stem + "p" + strconv.Itoa(os.Getpid()) + "-" + hex
}

// staleOwned reports whether base is stem + "p<pid>-<12 hex>" for a PID
// that proves it stale; full is the path used to claim it.
func staleOwned(base, stem, full string) bool {
	rest, ok := strings.CutPrefix(base, stem+"p")
	if !ok {
		return false
	}
	pidText, hex, ok := strings.Cut(rest, "-")
	if !ok || len(hex) != 12 || strings.Trim(hex, "0123456789abcdef") != "" {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != pidText {
		return false
	}
	if pid == os.Getpid() {
		_, busy := inUse.Load(full)
		return !busy
	}
	return !processRuns(pid)
}

// processRuns reports whether a process with this PID exists. A process
// this user may not signal (EPERM) exists too.
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ctxReader fails every read once ctx is done, so an interrupted import
// stops at its next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ctxWriter fails every write once ctx is done, so an interrupted export
// stops at its next write.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// orBackground is ctx, or context.Background() when nil.
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
