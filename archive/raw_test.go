package archive

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Builders of hostile archives, including what archive/tar refuses to write.

// tarOf writes entries with archive/tar: each is a header and its data.
type tarEntry struct {
	hdr  tar.Header
	data string
}

func tarOf(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeXGlobalHeader {
			if h.Mode == 0 {
				h.Mode = 0o644
			}
			h.ModTime = time.Unix(0, 0)
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("write %q: %v", h.Name, err)
		}
		if _, err := io.WriteString(tw, e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func file(name, data string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name}, data: data}
}

func dir(name string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

// rawHeader builds one 512-byte ustar header block by hand; set edits the
// block before its checksum is computed.
func rawHeader(name string, typ byte, size int64, set func(b []byte)) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	putNumeric(b[124:136], size)
	copy(b[136:148], "00000000000\x00")
	b[156] = typ
	copy(b[257:265], "ustar\x0000")
	if set != nil {
		set(b)
	}
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// putNumeric writes n as octal, or in GNU base-256 if it does not fit.
func putNumeric(field []byte, n int64) {
	s := fmt.Sprintf("%0*o\x00", len(field)-1, n)
	if len(s) <= len(field) {
		copy(field, s)
		return
	}
	for i := range field {
		field[i] = 0
	}
	binary.BigEndian.PutUint64(field[len(field)-8:], uint64(n))
	field[0] = 0x80
}

// pad rounds data up to whole 512-byte blocks.
func pad(data []byte) []byte {
	if r := len(data) % 512; r != 0 {
		data = append(data, make([]byte, 512-r)...)
	}
	return data
}

// paxHeader is a PAX extended header ('x') with the given records.
func paxHeader(records ...[2]string) []byte {
	var body []byte
	for _, r := range records {
		rec := " " + r[0] + "=" + r[1] + "\n"
		n := len(rec)
		for {
			full := fmt.Sprintf("%d%s", n, rec)
			if len(full) == n {
				body = append(body, full...)
				break
			}
			n = len(full)
		}
	}
	return append(rawHeader("PaxHeaders/x", 'x', int64(len(body)), nil), pad(body)...)
}

// endOfArchive is the two zero blocks that end a tar.
var endOfArchive = make([]byte, 1024)

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// gnuSparse10GB is an old-GNU sparse entry ('S') whose real size is 10 GB,
// with one 512-byte data block at its end.
func gnuSparse10GB() []byte {
	const real = 10_000_000_000
	h := rawHeader("big.bin", 'S', 512, func(b []byte) {
		copy(b[257:265], "ustar  \x00")
		putNumeric(b[386:398], real-512) // sparse[0].offset
		putNumeric(b[398:410], 512)      // sparse[0].numbytes
		putNumeric(b[483:495], real)     // realsize
	})
	return concat(h, make([]byte, 512), endOfArchive)
}

// paxSparse10GB is a PAX 1.0 sparse entry whose real size is 10 GB.
func paxSparse10GB() []byte {
	sparseMap := pad([]byte("1\n9999999488\n512\n"))
	data := append(sparseMap, make([]byte, 512)...)
	return concat(
		paxHeader([2]string{"GNU.sparse.major", "1"}, [2]string{"GNU.sparse.minor", "0"},
			[2]string{"GNU.sparse.name", "big.bin"}, [2]string{"GNU.sparse.realsize", "10000000000"}),
		rawHeader("GNUSparseFile.0/big.bin", '0', int64(len(data)), nil), data, endOfArchive)
}

// zstdOf compresses b with the export encoder.
func zstdOf(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := newEncoder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// repeatReader yields b n times without holding more than b.
type repeatReader struct {
	b    []byte
	n    int64
	off  int
	read int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	r.read += int64(n)
	if r.off == len(r.b) {
		r.off = 0
		r.n--
	}
	return n, nil
}

// zstdBomb returns a stream that decompresses to prefix followed by
// `size` bytes of repeat, built cheaply: one small frame holding 1 MiB of
// the pattern, concatenated (zstd frames concatenate) as often as needed.
func zstdBomb(t testing.TB, prefix, repeat []byte, size int64) io.Reader {
	t.Helper()
	const chunk = 1 << 20
	block := bytes.Repeat(repeat, chunk/len(repeat))
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(block, nil)
	head := enc.EncodeAll(prefix, nil)
	return io.MultiReader(bytes.NewReader(head), &repeatReader{b: frame, n: size / int64(len(block))})
}

// zstdHugeWindow is a zstd frame header asking for a 1 GiB window.
func zstdHugeWindow() []byte {
	// magic, frame header descriptor 0 (no content size, not single
	// segment), window descriptor exponent 20 -> 2^(10+20) bytes, then one
	// last raw block of 512 bytes.
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 20 << 3}
	blockHeader := uint32(1) | uint32(0)<<1 | uint32(512)<<3
	b = append(b, byte(blockHeader), byte(blockHeader>>8), byte(blockHeader>>16))
	return append(b, make([]byte, 512)...)
}

func tarHeaderSymlink(name, target string) tar.Header {
	return tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}
}
