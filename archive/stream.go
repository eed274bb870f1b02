package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// Compression names how an archive stream is compressed.
type Compression int

// The compressions Export writes and Import reads.
const (
	None Compression = iota // a plain tar
	Zstd                    // a tar inside one zstd frame (FORMAT §8.3)
)

// String returns "none" or "zstd".
func (c Compression) String() string {
	if c == Zstd {
		return "zstd"
	}
	return "none"
}

// CompressionFor picks the compression a file name asks for: Zstd for a name
// ending in ".zst" or ".zstd", None otherwise.
func CompressionFor(name string) Compression {
	if strings.HasSuffix(name, ".zst") || strings.HasSuffix(name, ".zstd") {
		return Zstd
	}
	return None
}

// encoderWindow is the zstd window Export uses. It is fixed, not left to the
// library's per-level default, so the bytes stay the same across upgrades of
// the library's defaults, and it stays well under DefaultMaxWindow.
const encoderWindow = 8 << 20

// newEncoder returns the zstd encoder of FORMAT §8.3: default level, one
// goroutine, fixed window, with checksum. Its output depends only on its input.
func newEncoder(w io.Writer) (*zstd.Encoder, error) {
	return zstd.NewWriter(w,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(encoderWindow),
		zstd.WithEncoderCRC(true),
	)
}

// writeStream writes entries as a tar, compressed as cfg says, to w.
func writeStream(fsys vfs.FS, dir string, w io.Writer, entries *folder, cfg ExportConfig, res *ExportResult) error {
	out := w
	var zw *zstd.Encoder
	if cfg.Compression == Zstd {
		var err error
		if zw, err = newEncoder(w); err != nil {
			return fmt.Errorf("export: zstd: %w", err)
		}
		out = zw
	}
	bw := bufio.NewWriterSize(out, copyBufSize)
	tw := tar.NewWriter(bw)
	buf := make([]byte, copyBufSize)
	err := entries.each("", func(e srcEntry) error {
		n, err := writeEntry(fsys, dir, tw, e, buf, cfg)
		if err != nil {
			return err
		}
		res.Entries++
		if !e.isDir {
			res.Files++
			res.Bytes += n
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return fmt.Errorf("export: zstd: %w", err)
		}
	}
	return nil
}

// header returns the fixed-metadata header of FORMAT §8.2.
func header(e srcEntry) *tar.Header {
	h := &tar.Header{
		Name:     e.name,
		Typeflag: tar.TypeReg,
		Mode:     FileMode,
		Size:     e.size,
		ModTime:  modTime,
		Format:   tar.FormatPAX,
	}
	if e.isDir {
		h.Name += "/"
		h.Typeflag = tar.TypeDir
		h.Mode = DirMode
		h.Size = 0
	}
	return h
}

// writeEntry writes one entry and returns the content bytes written.
func writeEntry(fsys vfs.FS, dir string, tw *tar.Writer, e srcEntry, buf []byte, cfg ExportConfig) (int64, error) {
	if e.isDir {
		if err := tw.WriteHeader(header(e)); err != nil {
			return 0, fmt.Errorf("export %s: %w", e.name, err)
		}
		return 0, nil
	}
	if e.data != nil {
		return e.size, writeData(tw, e, bytes.NewReader(e.data), buf, cfg)
	}
	f, err := fsys.Open(filepath.Join(dir, filepath.FromSlash(e.name)))
	if err != nil {
		return 0, fmt.Errorf("export %s: %w", e.name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("export %s: %w", e.name, err)
	}
	e.size = info.Size()
	return e.size, writeData(tw, e, f, buf, cfg)
}

// writeData writes the header of e and exactly e.size bytes from r, and
// fails with ErrChanged if r holds fewer or more.
func writeData(tw *tar.Writer, e srcEntry, r io.Reader, buf []byte, cfg ExportConfig) error {
	if err := tw.WriteHeader(header(e)); err != nil {
		return fmt.Errorf("export %s: %w", e.name, err)
	}
	var dst io.Writer = tw
	var h *digest.Hasher
	if cfg.Check != nil {
		h = digest.NewHasher()
		dst = io.MultiWriter(tw, h)
	}
	if cfg.Progress != nil {
		dst = progressWriter{dst, cfg.Progress}
	}
	n, err := io.CopyBuffer(dst, io.LimitReader(r, e.size), buf)
	if err != nil {
		return fmt.Errorf("export %s: %w", e.name, err)
	}
	if n != e.size || !atEOF(r) {
		return fmt.Errorf("export %s: %w", e.name, ErrChanged)
	}
	if h != nil {
		if err := cfg.Check(e.name, n, h.Digest()); err != nil {
			return fmt.Errorf("export %s: %w", e.name, err)
		}
	}
	return nil
}

// atEOF reports whether r has nothing more to read.
func atEOF(r io.Reader) bool {
	var b [1]byte
	n, _ := r.Read(b[:])
	return n == 0
}

type progressWriter struct {
	w io.Writer
	p Progress
}

func (p progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.p.Add(int64(n))
	return n, err
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
