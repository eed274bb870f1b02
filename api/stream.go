package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/agentcapsule/capsule/digest"
)

// StreamMagic opens every push stream, naming its format version.
const StreamMagic = "capsule-stream/1\n"

// MaxFrameSize bounds the size one frame of a push stream may announce.
const MaxFrameSize = 16 << 30

// Errors of push streams.
var (
	ErrBadFrame       = errors.New("api: bad stream frame")
	ErrDigestMismatch = errors.New("api: blob digest mismatch")
)

// FrameKind names what a frame of a push stream carries.
type FrameKind string

// The frame kinds.
const (
	// FrameBlob carries one blob; the header names its digest, verified as
	// the frame is read.
	FrameBlob FrameKind = "blob"
	// FrameJournal carries journal lines (JSONL) continuing the target's
	// copy of the journal after Count events.
	FrameJournal FrameKind = "journal"
	// FrameMessage carries one move-protocol Message (JSON), delivered
	// after every earlier frame of the stream was stored.
	FrameMessage FrameKind = "message"
	// FrameDelta carries one blob as zstd compressed with the bytes of
	// another blob, its base, as a raw dictionary. The header names the
	// blob's digest and size, the base's digest and the compressed size
	// (the bytes that follow). The receiver decodes it with the base it
	// holds and verifies the digest before the blob enters its store.
	FrameDelta FrameKind = "delta"
)

// MaxFrameHeader bounds the header line of a frame, newline excluded.
const MaxFrameHeader = 256

// A push stream is the body of a push request: StreamMagic, then frames.
// Each frame is a header line and exactly size bytes:
//
//	blob <digest> <size>\n<bytes>
//	journal <count> <size>\n<bytes>
//	message <size>\n<bytes>
//	delta <digest> <size> <base> <zsize>\n<zsize bytes>
//
// The stream ends at EOF after a complete frame. Blobs are content
// addressed and verified on receipt (a delta after decoding, by the
// receiver, which holds the base); journal lines are checked by the
// receiver's journal code; the message comes last.

// Frame is the header of one frame. Size is always the number of bytes
// that follow the header (for FrameDelta, the compressed size).
type Frame struct {
	Kind   FrameKind
	Digest digest.Digest // FrameBlob, FrameDelta: the blob's digest
	Count  uint64        // FrameJournal: events the receiver already has
	Size   int64
	// Base is the digest of the blob whose bytes are the dictionary of a
	// FrameDelta.
	Base digest.Digest
	// BlobSize is the size of the blob a FrameDelta decodes to.
	BlobSize int64
}

func (f Frame) header() string {
	switch f.Kind {
	case FrameBlob:
		return fmt.Sprintf("blob %s %d\n", f.Digest, f.Size)
	case FrameJournal:
		return fmt.Sprintf("journal %d %d\n", f.Count, f.Size)
	case FrameDelta:
		return fmt.Sprintf("delta %s %d %s %d\n", f.Digest, f.BlobSize, f.Base, f.Size)
	default:
		return fmt.Sprintf("message %d\n", f.Size)
	}
}

// WriteStreamHeader writes the magic that starts a push stream.
func WriteStreamHeader(w io.Writer) error {
	_, err := io.WriteString(w, StreamMagic)
	return err
}

// WriteFrame writes f's header then f.Size bytes of r, and returns the
// number of bytes written. It fails if r holds fewer than f.Size bytes.
// It copies in pieces of up to 1 MiB: a file is read, and a pipe written,
// in large pieces rather than io.Copy's 32 KiB.
func WriteFrame(w io.Writer, f Frame, r io.Reader) (int64, error) {
	hn, err := io.WriteString(w, f.header())
	if err != nil {
		return int64(hn), err
	}
	bp := copyPool.Get().(*[]byte)
	defer copyPool.Put(bp)
	n, err := io.CopyBuffer(w, io.LimitReader(r, f.Size), *bp)
	if err == nil && n < f.Size {
		err = fmt.Errorf("%w: %s frame is shorter than %d bytes", ErrBadFrame, f.Kind, f.Size)
	}
	return int64(hn) + n, err
}

// copyPool holds the buffers WriteFrame copies a frame's bytes with.
var copyPool = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// StreamReader reads the frames of a push stream.
type StreamReader struct {
	r       *bufio.Reader
	cur     io.Reader
	started bool
	maxSize int64
	piece   int       // hashPiece; 0 hashes every frame inline (tests)
	hp      *hashPipe // hashes large blob frames; one frame at a time
	// checkMessage, if set, checks a message frame's Message before Next
	// returns it (the peer API checks its identifiers at the edge).
	checkMessage func(Message) error
}

// NewStreamReader reads a push stream from r; frames announcing more than
// maxSize bytes are refused (maxSize <= 0 means MaxFrameSize).
func NewStreamReader(r io.Reader, maxSize int64) *StreamReader {
	if maxSize <= 0 {
		maxSize = MaxFrameSize
	}
	return &StreamReader{r: bufio.NewReaderSize(r, 64<<10), maxSize: maxSize, piece: hashPiece}
}

// Next returns the next frame's header and a reader of its content. A blob
// frame's reader returns ErrDigestMismatch instead of io.EOF when the bytes
// do not hash to the announced digest (a delta frame's content is
// compressed: its receiver checks the digest once it has decoded it);
// every frame's reader returns
// io.ErrUnexpectedEOF when the stream ends early. A blob frame of more
// than 256 KiB is hashed on a second goroutine while it is read (in pieces,
// at most 1 MiB of them per stream); its reader still returns io.EOF only
// once every byte is hashed and matched. Next skips whatever the previous
// frame's reader left unread. At the clean end of the stream Next returns
// io.EOF.
func (s *StreamReader) Next() (Frame, io.Reader, error) {
	if err := s.start(); err != nil {
		return Frame{}, nil, err
	}
	if s.cur != nil {
		if _, err := io.Copy(io.Discard, s.cur); err != nil {
			return Frame{}, nil, err
		}
	}
	line, err := s.readLine()
	if err != nil {
		return Frame{}, nil, err
	}
	f, err := parseFrameHeader(line, s.maxSize)
	if err != nil {
		return Frame{}, nil, err
	}
	fr := &frameReader{f: f, r: io.LimitReader(s.r, f.Size)}
	if f.Kind == FrameMessage && s.checkMessage != nil {
		return s.checkedMessage(f, fr)
	}
	switch {
	case f.Kind == FrameBlob && s.piece > 0 && f.Size > int64(s.piece):
		fr.h = s.pipe()
	case f.Kind == FrameBlob:
		fr.h = digest.NewHasher()
	}
	s.cur = fr
	return f, fr, nil
}

// checkedMessage reads a message frame whole, checks it, and returns a
// reader of its bytes.
func (s *StreamReader) checkedMessage(f Frame, fr *frameReader) (Frame, io.Reader, error) {
	if f.Size > MaxMessage {
		return Frame{}, nil, fmt.Errorf("%w: message frame of %d bytes, limit %d", ErrBadFrame, f.Size, MaxMessage)
	}
	b, err := io.ReadAll(fr)
	if err != nil {
		return Frame{}, nil, err
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return Frame{}, nil, fmt.Errorf("%w: message frame: %v", ErrInvalid, err)
	}
	if err := s.checkMessage(m); err != nil {
		return Frame{}, nil, err
	}
	s.cur = bytes.NewReader(b)
	return f, s.cur, nil
}

func (s *StreamReader) start() error {
	if s.started {
		return nil
	}
	s.started = true
	magic := make([]byte, len(StreamMagic))
	if _, err := io.ReadFull(s.r, magic); err != nil || string(magic) != StreamMagic {
		return fmt.Errorf("%w: stream does not start with %q", ErrBadFrame, strings.TrimSpace(StreamMagic))
	}
	return nil
}

func (s *StreamReader) readLine() (string, error) {
	const maxLine = MaxFrameHeader
	var b strings.Builder
	for {
		c, err := s.r.ReadByte()
		switch {
		case err == io.EOF && b.Len() == 0:
			return "", io.EOF
		case err == io.EOF:
			return "", fmt.Errorf("%w: header cut short", ErrBadFrame)
		case err != nil:
			return "", err
		case c == '\n':
			return b.String(), nil
		case b.Len() >= maxLine:
			return "", fmt.Errorf("%w: header longer than %d bytes", ErrBadFrame, maxLine)
		}
		b.WriteByte(c)
	}
}

func parseFrameHeader(line string, maxSize int64) (Frame, error) {
	fields := strings.Split(line, " ")
	var f Frame
	var err error
	switch {
	case fields[0] == string(FrameBlob) && len(fields) == 3:
		f.Kind = FrameBlob
		if f.Digest, err = digest.Parse(fields[1]); err != nil {
			return Frame{}, fmt.Errorf("%w: %v", ErrBadFrame, err)
		}
	case fields[0] == string(FrameJournal) && len(fields) == 3:
		f.Kind = FrameJournal
		if f.Count, err = strconv.ParseUint(fields[1], 10, 64); err != nil || strconv.FormatUint(f.Count, 10) != fields[1] {
			return Frame{}, fmt.Errorf("%w: journal count %q", ErrBadFrame, fields[1])
		}
	case fields[0] == string(FrameMessage) && len(fields) == 2:
		f.Kind = FrameMessage
	case fields[0] == string(FrameDelta) && len(fields) == 5:
		if f, err = parseDeltaHeader(fields, maxSize); err != nil {
			return Frame{}, err
		}
	default:
		return Frame{}, fmt.Errorf("%w: header %q", ErrBadFrame, clip(line))
	}
	ss := fields[len(fields)-1]
	f.Size, err = strconv.ParseInt(ss, 10, 64)
	if err != nil || f.Size < 0 || strconv.FormatInt(f.Size, 10) != ss {
		return Frame{}, fmt.Errorf("%w: size %q", ErrBadFrame, ss)
	}
	if f.Size > maxSize {
		return Frame{}, fmt.Errorf("%w: %s frame announces %d bytes, limit %d", ErrBadFrame, f.Kind, f.Size, maxSize)
	}
	return f, nil
}

// parseDeltaHeader parses the digest, blob size and base of a delta
// header; the compressed size is parsed with every other frame's size.
func parseDeltaHeader(fields []string, maxSize int64) (Frame, error) {
	f := Frame{Kind: FrameDelta}
	var err error
	if f.Digest, err = digest.Parse(fields[1]); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	if f.Base, err = digest.Parse(fields[3]); err != nil {
		return Frame{}, fmt.Errorf("%w: base: %v", ErrBadFrame, err)
	}
	if f.Base == f.Digest {
		return Frame{}, fmt.Errorf("%w: delta of %s against itself", ErrBadFrame, f.Digest)
	}
	f.BlobSize, err = strconv.ParseInt(fields[2], 10, 64)
	if err != nil || f.BlobSize < 0 || strconv.FormatInt(f.BlobSize, 10) != fields[2] {
		return Frame{}, fmt.Errorf("%w: blob size %q", ErrBadFrame, clip(fields[2]))
	}
	if f.BlobSize > maxSize {
		return Frame{}, fmt.Errorf("%w: delta frame announces a blob of %d bytes, limit %d", ErrBadFrame, f.BlobSize, maxSize)
	}
	return f, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// pipe returns the stream's hash pipe, reset for a new frame.
func (s *StreamReader) pipe() *hashPipe {
	if s.hp == nil {
		s.hp = &hashPipe{size: s.piece, free: make(chan []byte, hashPieces)}
	}
	s.hp.h = digest.NewHasher()
	return s.hp
}

// frameHasher hashes the bytes of a blob frame as they are read.
type frameHasher interface {
	io.Writer
	// Digest returns the digest of every byte written, once they are all
	// hashed.
	Digest() digest.Digest
}

type frameReader struct {
	f    Frame
	r    io.Reader
	h    frameHasher // blob frames only
	n    int64
	done bool
}

func (fr *frameReader) Read(p []byte) (int, error) {
	if fr.done {
		return 0, io.EOF
	}
	n, err := fr.r.Read(p)
	fr.n += int64(n)
	if fr.h != nil {
		fr.h.Write(p[:n])
	}
	if err != io.EOF {
		return n, err
	}
	fr.done = true
	if fr.n != fr.f.Size {
		if fr.h != nil {
			fr.h.Digest() // wait for the hasher: the stream may reuse its pieces
		}
		return n, fmt.Errorf("%w: %s frame ended after %d of %d bytes", io.ErrUnexpectedEOF, fr.f.Kind, fr.n, fr.f.Size)
	}
	if fr.h == nil {
		return n, io.EOF
	}
	if got := fr.h.Digest(); got != fr.f.Digest {
		return n, fmt.Errorf("%w: announced %s, content is %s", ErrDigestMismatch, fr.f.Digest, got)
	}
	return n, io.EOF
}

// A blob frame of more than hashPiece bytes is hashed on a second
// goroutine, pipelined with the reading (and, on a node, the TLS
// decryption) of its bytes: the reader copies them into pieces of
// hashPiece bytes and hands each full piece to the hasher. At most
// hashPieces pieces exist per stream, so a stream holds at most
// hashPieces*hashPiece bytes for hashing; the reader waits for a free
// piece when the hasher falls behind. The frame's last bytes (at most one
// piece) are hashed by the reader once the hasher has caught up.
const (
	hashPiece  = 256 << 10
	hashPieces = 4
)

// hashPipe is the hasher of one large blob frame at a time. Its worker
// goroutine runs only while pieces are queued, so a frame its reader
// abandons leaves no goroutine behind.
type hashPipe struct {
	h     *digest.Hasher
	size  int         // of a piece
	free  chan []byte // pieces ready to fill; capacity hashPieces
	made  int         // pieces allocated so far
	fill  []byte      // the piece being filled, if any
	mu    sync.Mutex
	queue [][]byte // full pieces waiting for the worker
	busy  bool     // a worker is running
	wg    sync.WaitGroup
}

// Write copies p into pieces, handing each full one to the worker.
func (hp *hashPipe) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if hp.fill == nil {
			hp.fill = hp.piece()
		}
		k := copy(hp.fill[len(hp.fill):cap(hp.fill)], p)
		hp.fill = hp.fill[:len(hp.fill)+k]
		p = p[k:]
		if len(hp.fill) == cap(hp.fill) {
			hp.submit(hp.fill)
			hp.fill = nil
		}
	}
	return n, nil
}

// Digest waits for the worker, hashes the partly filled piece and returns
// the digest of everything written.
func (hp *hashPipe) Digest() digest.Digest {
	hp.wg.Wait()
	if hp.fill != nil {
		hp.h.Write(hp.fill)
		hp.free <- hp.fill[:0]
		hp.fill = nil
	}
	return hp.h.Digest()
}

// piece returns an empty piece, waiting for one when all are in use.
func (hp *hashPipe) piece() []byte {
	select {
	case b := <-hp.free:
		return b
	default:
	}
	if hp.made < hashPieces {
		hp.made++
		return make([]byte, 0, hp.size)
	}
	return <-hp.free
}

// submit queues a full piece for hashing, starting a worker if none runs.
func (hp *hashPipe) submit(b []byte) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.queue = append(hp.queue, b)
	if !hp.busy {
		hp.busy = true
		hp.wg.Add(1)
		go hp.work()
	}
}

// work hashes queued pieces in order until the queue is empty.
func (hp *hashPipe) work() {
	defer hp.wg.Done()
	for {
		hp.mu.Lock()
		if len(hp.queue) == 0 {
			hp.busy = false
			hp.mu.Unlock()
			return
		}
		b := hp.queue[0]
		hp.queue = hp.queue[1:]
		hp.mu.Unlock()
		hp.h.Write(b)
		hp.free <- b[:0]
	}
}
