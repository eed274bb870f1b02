package archive

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

var (
	zstdMagic  = []byte{0x28, 0xb5, 0x2f, 0xfd}
	gzipMagic  = []byte{0x1f, 0x8b}
	xzMagic    = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	bzip2Magic = []byte{'B', 'Z', 'h'}
)

// sniff reads the first bytes of r to tell a zstd frame from a plain tar;
// it refuses the compressions Capsule does not write.
func sniff(br *bufio.Reader) (Compression, error) {
	head, err := br.Peek(6)
	if err != nil && !errors.Is(err, io.EOF) {
		return None, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	switch {
	case bytes.HasPrefix(head, zstdMagic), isSkippableFrame(head):
		return Zstd, nil
	case bytes.HasPrefix(head, gzipMagic):
		return None, fmt.Errorf("%w: gzip (use .capsule.tar or .capsule.tar.zst)", ErrCompression)
	case bytes.HasPrefix(head, xzMagic):
		return None, fmt.Errorf("%w: xz (use .capsule.tar or .capsule.tar.zst)", ErrCompression)
	case bytes.HasPrefix(head, bzip2Magic):
		return None, fmt.Errorf("%w: bzip2 (use .capsule.tar or .capsule.tar.zst)", ErrCompression)
	}
	return None, nil
}

// isSkippableFrame recognises a zstd skippable frame (magic 0x184D2A5?).
func isSkippableFrame(b []byte) bool {
	return len(b) >= 4 && b[0]&0xf0 == 0x50 && b[1] == 0x2a && b[2] == 0x4d && b[3] == 0x18
}

// openStream returns the tar bytes of r, decompressing zstd, and never
// yielding more than lim.maxStream() bytes: a decompression bomb fails with
// ErrLimit after a bounded amount of work and memory. The returned close
// function releases the decoder.
func openStream(r io.Reader, lim Limits) (*eofReader, Compression, func(), error) {
	br := bufio.NewReaderSize(r, copyBufSize)
	comp, err := sniff(br)
	if err != nil {
		return nil, None, nil, err
	}
	var src io.Reader = br
	closeFn := func() {}
	if comp == Zstd {
		dec, err := zstd.NewReader(br,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(lim.MaxWindow),
			zstd.WithDecoderMaxMemory(lim.MaxWindow),
		)
		if err != nil {
			return nil, None, nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		src, closeFn = dec, dec.Close
	}
	return &eofReader{r: &limitReader{r: src, left: lim.maxStream(), max: lim.maxStream()}}, comp, closeFn, nil
}

// limitReader fails with ErrLimit once more than left bytes were asked for.
type limitReader struct {
	r    io.Reader
	left int64
	max  int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("%w: the decompressed stream is over %d bytes (the total limit plus %d bytes of headers per entry)", ErrLimit, l.max, headerAllowance)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// eofReader remembers whether it ever reported the end of its input, which
// tells a complete tar (ended by its two zero blocks, read before any EOF)
// from one cut at a block boundary.
type eofReader struct {
	r      io.Reader
	sawEOF bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		e.sawEOF = true
	}
	return n, err
}
