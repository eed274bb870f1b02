package store

import (
	"fmt"
	"io"
	"sync"
)

// ChunkSize is the size of the writes of CopyChunks, and the largest blob
// Receive holds in memory.
const ChunkSize = 1 << 20

var chunkPool = sync.Pool{New: func() any { b := make([]byte, ChunkSize); return &b }}

// CopyChunks copies r to w in writes of up to ChunkSize bytes: a stream
// read in TLS records of 16 KiB would otherwise cost a write system call
// per record.
func CopyChunks(w io.Writer, r io.Reader) (int64, error) {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	var n int64
	for {
		k, err := readAll(r, (*bp)[:ChunkSize])
		if k > 0 {
			if _, werr := w.Write((*bp)[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err != nil || k < ChunkSize {
			return n, err
		}
	}
}

// readAll reads from r into buf until buf is full (nil error), r ends
// (nil error, fewer bytes) or r fails. Unlike io.ReadFull it tells a
// clean end from a failure only by r's own error.
func readAll(r io.Reader, buf []byte) (int, error) {
	k := 0
	for k < len(buf) {
		m, err := r.Read(buf[k:])
		k += m
		if err == io.EOF {
			return k, nil
		}
		if err != nil {
			return k, err
		}
	}
	return k, nil
}

// ReadToEnd reads all of r into buf, which must be large enough, and
// returns the bytes read. It reads until r reports its end, even when buf
// is full: a checking reader checks at the end.
func ReadToEnd(r io.Reader, buf []byte) (int, error) {
	k, err := readAll(r, buf)
	if err != nil || k < len(buf) {
		return k, err
	}
	var one [1]byte
	m, err := r.Read(one[:])
	for m == 0 && err == nil {
		m, err = r.Read(one[:])
	}
	switch {
	case m > 0:
		return k, fmt.Errorf("%w: more than %d bytes", ErrBlobMismatch, len(buf))
	case err == io.EOF:
		return k, nil
	}
	return k, err
}
