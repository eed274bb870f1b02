package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/google/go-cmp/cmp"
)

func blobFrame(b string) Frame {
	return Frame{Kind: FrameBlob, Digest: digest.FromString(b), Size: int64(len(b))}
}

func stream(t testing.TB, frames ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteStreamHeader(&buf); err != nil {
		t.Fatal(err)
	}
	for _, x := range frames {
		var f Frame
		var body string
		switch v := x.(type) {
		case string:
			f, body = blobFrame(v), v
		case Frame:
			f, body = v, strings.Repeat("j", int(v.Size))
		}
		if _, err := WriteFrame(&buf, f, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func readAll(data []byte) ([]string, error) {
	s := NewStreamReader(bytes.NewReader(data), 1<<20)
	var got []string
	for {
		f, r, err := s.Next()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return got, err
		}
		got = append(got, fmt.Sprintf("%s:%d:%s", f.Kind, f.Count, b))
	}
}

func TestStreamRoundTrip(t *testing.T) {
	big := strings.Repeat("x", 200000)
	delta := Frame{Kind: FrameDelta, Digest: digest.FromString("new"), BlobSize: 3, Base: digest.FromString("old"), Size: 4}
	data := stream(t, "alpha", "", Frame{Kind: FrameJournal, Count: 7, Size: 3}, big, delta, Frame{Kind: FrameMessage, Size: 2})
	got, err := readAll(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"blob:0:alpha", "blob:0:", "journal:7:jjj", "blob:0:" + big, "delta:0:jjjj", "message:0:jj"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestStreamDetectsDamage(t *testing.T) {
	good := stream(t, "hello world", "second")
	flipped := bytes.Clone(good)
	flipped[bytes.Index(flipped, []byte("hello"))] ^= 0x20
	a := string(digest.FromString("a"))
	b := string(digest.FromString("b"))
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"corrupted chunk", flipped, ErrDigestMismatch},
		{"truncated blob", good[:len(good)-3], io.ErrUnexpectedEOF},
		{"truncated header", good[:len(StreamMagic)+10], ErrBadFrame},
		{"no magic", good[3:], ErrBadFrame},
		{"size over limit", []byte(StreamMagic + "blob " + a + " 99999999999\n"), ErrBadFrame},
		{"negative size", []byte(StreamMagic + "blob " + a + " -1\n"), ErrBadFrame},
		{"size with plus", []byte(StreamMagic + "blob " + a + " +1\na"), ErrBadFrame},
		{"bad digest", []byte(StreamMagic + "blob sha256:zz 1\na"), ErrBadFrame},
		{"unknown kind", []byte(StreamMagic + "tarball 1\na"), ErrBadFrame},
		{"journal without count", []byte(StreamMagic + "journal 1\na"), ErrBadFrame},
		{"header too long", []byte(StreamMagic + strings.Repeat("b", 300)), ErrBadFrame},
		{"delta against itself", []byte(StreamMagic + "delta " + a + " 1 " + a + " 1\na"), ErrBadFrame},
		{"delta without base", []byte(StreamMagic + "delta " + a + " 1 1\na"), ErrBadFrame},
		{"delta blob over limit", []byte(StreamMagic + "delta " + a + " 99999999999 " + b + " 1\na"), ErrBadFrame},
		{"delta bad base", []byte(StreamMagic + "delta " + a + " 1 sha256:zz 1\na"), ErrBadFrame},
		{"delta truncated", []byte(StreamMagic + "delta " + a + " 1 " + b + " 5\nab"), io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readAll(c.data)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestStreamSkipsUnreadFrame(t *testing.T) {
	s := NewStreamReader(bytes.NewReader(stream(t, "one", "two")), 0)
	if _, _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	f, r, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if string(b) != "two" || f.Size != 3 {
		t.Errorf("second frame = %q (%+v)", b, f)
	}
}

// FuzzStream feeds arbitrary bytes to the push stream reader: it must never
// panic, every blob frame it accepts must hash to its digest, and hashing
// blob frames on a second goroutine (in pieces of 3 bytes, so that small
// inputs cross many) must accept and refuse exactly what hashing them
// inline does.
func FuzzStream(f *testing.F) {
	f.Add(stream(f, "a", "bb", Frame{Kind: FrameJournal, Count: 1, Size: 2}))
	f.Add([]byte(StreamMagic))
	f.Add([]byte(StreamMagic + "blob sha256:00 5\nabc"))
	f.Add([]byte(StreamMagic + "message 2\n{}"))
	f.Add(stream(f, "a blob of several pieces", "and another one", "x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inline := fuzzRead(t, data, 0)
		piped := fuzzRead(t, data, 3)
		if diff := cmp.Diff(inline, piped); diff != "" {
			t.Fatalf("inline (-) and pipelined (+) hashing differ:\n%s", diff)
		}
	})
}

// fuzzRead reads up to 100 frames of data, hashing blob frames of more
// than piece bytes on a second goroutine (0: inline), and returns what it
// accepted and the kind of error that ended it.
func fuzzRead(t *testing.T, data []byte, piece int) []string {
	s := NewStreamReader(bytes.NewReader(data), 1<<16)
	s.piece = piece
	var got []string
	for i := 0; i < 100; i++ {
		fr, r, err := s.Next()
		if err != nil {
			return append(got, errorKind(err))
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return append(got, errorKind(err))
		}
		if int64(len(b)) != fr.Size || fr.Kind == FrameBlob && digest.FromBytes(b) != fr.Digest {
			t.Fatalf("accepted frame %+v with %d bytes hashing to %s", fr, len(b), digest.FromBytes(b))
		}
		got = append(got, fmt.Sprintf("%+v %q", fr, b))
	}
	return got
}

func errorKind(err error) string {
	for _, e := range []error{io.EOF, ErrBadFrame, ErrDigestMismatch, io.ErrUnexpectedEOF} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return err.Error()
}

// FuzzFrameHeader feeds arbitrary header lines to the frame header parser:
// it must never panic, and a header it accepts must be the one its frame
// writes (one spelling per frame), within the size limit.
func FuzzFrameHeader(f *testing.F) {
	d := string(digest.FromString("d"))
	for _, s := range []string{"blob " + d + " 5", "journal 3 10", "message 2", "delta " + d + " 10 " + string(digest.FromString("e")) + " 4", "delta " + d + " 10 " + d + " 4", "blob x 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fr, err := parseFrameHeader(line, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error %v does not wrap ErrBadFrame", err)
			}
			return
		}
		if h := fr.header(); h != line+"\n" {
			t.Fatalf("accepted %q as %+v, which is written %q", line, fr, h)
		}
		if fr.Size > 1<<20 || fr.BlobSize > 1<<20 || fr.Size < 0 || fr.BlobSize < 0 {
			t.Fatalf("accepted %q with sizes over the limit", line)
		}
	})
}

// FuzzDecodeRequest feeds arbitrary bodies to the local API's strict JSON
// decoding: it must never panic, and what it accepts re-encodes to JSON
// that decodes to the same request.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"to":"n2222222222222222222222222a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req MoveRequest
		if err := decodeJSON(bytes.NewReader(data), maxRequest, &req); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		b, _ := json.Marshal(req)
		var again MoveRequest
		if err := decodeJSON(bytes.NewReader(b), maxRequest, &again); err != nil || again != req {
			t.Fatalf("re-decoding %s: %+v, %v", b, again, err)
		}
	})
}

// pieceSizes are the sizes around the pieces a large blob frame is hashed
// in (hashPiece), and several pieces (more than a stream holds, so that
// the reader waits for the hasher).
func pieceSizes(piece int) []int {
	return []int{0, 1, piece - 1, piece, piece + 1, 3*piece + 7, (hashPieces+3)*piece + 5}
}

// readFrameIn reads r to its end in reads of up to step bytes, and returns
// the bytes read and the error that ended it (nil at io.EOF). A read that
// returns an error other than io.EOF must be the last one.
func readFrameIn(r io.Reader, step int) ([]byte, error) {
	var got []byte
	buf := make([]byte, step)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}

// TestStreamLyingBlob sends blob frames whose bytes differ from their
// announced digest in one byte (first, middle or last) at sizes around
// the hash pieces, read in steps of several sizes, hashed inline and
// pipelined (in pieces of hashPiece bytes, and of 7 bytes): every one must deliver all its bytes and then fail with
// ErrDigestMismatch instead of io.EOF, and the same frames with their
// true digest must read back intact.
func TestStreamLyingBlob(t *testing.T) {
	for _, piece := range []int{0, 7, hashPiece} {
		sizes := pieceSizes(piece)
		if piece == 0 {
			sizes = pieceSizes(hashPiece)
		}
		for _, size := range sizes {
			content := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
			for _, where := range []string{"first", "middle", "last", "honest"} {
				for _, step := range []int{1 << 20, 4093} {
					name := fmt.Sprintf("piece=%d/size=%d/%s/step=%d", piece, size, where, step)
					t.Run(name, func(t *testing.T) {
						lyingBlobCase(t, piece, content, where, step)
					})
				}
			}
		}
	}
}

func lyingBlobCase(t *testing.T, piece int, content []byte, where string, step int) {
	sent := bytes.Clone(content)
	switch {
	case where == "honest":
	case len(sent) == 0:
		sent = nil // announce the digest of "x", send nothing
	case where == "first":
		sent[0] ^= 1
	case where == "middle":
		sent[len(sent)/2] ^= 1
	case where == "last":
		sent[len(sent)-1] ^= 1
	}
	announced := digest.FromBytes(content)
	if len(content) == 0 && where != "honest" {
		announced = digest.FromString("x")
	}
	var buf bytes.Buffer
	_ = WriteStreamHeader(&buf)
	if _, err := WriteFrame(&buf, Frame{Kind: FrameBlob, Digest: announced, Size: int64(len(sent))}, bytes.NewReader(sent)); err != nil {
		t.Fatal(err)
	}
	s := NewStreamReader(&buf, 0)
	s.piece = piece
	_, r, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	got, err := readFrameIn(r, step)
	if !bytes.Equal(got, sent) {
		t.Fatalf("read %d bytes before the frame's end, want the %d sent", len(got), len(sent))
	}
	if where == "honest" {
		if err != nil {
			t.Fatalf("honest frame: %v", err)
		}
	} else if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("lying frame ended with %v, want %v", err, ErrDigestMismatch)
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("read after the frame's end = %d, %v; want 0, EOF", n, err)
	}
}

// TestStreamTruncatedBlob cuts a stream inside a large blob frame at
// several places: its reader must fail with io.ErrUnexpectedEOF and never
// with io.EOF or a digest error.
func TestStreamTruncatedBlob(t *testing.T) {
	big := strings.Repeat("t", (hashPieces+2)*hashPiece+11)
	data := stream(t, big)
	start := len(data) - len(big)
	for _, cut := range []int{0, 1, hashPiece - 1, hashPiece, hashPiece + 1, 3 * hashPiece, len(big) - 1} {
		for _, piece := range []int{0, hashPiece} {
			t.Run(fmt.Sprintf("cut=%d/piece=%d", cut, piece), func(t *testing.T) {
				s := NewStreamReader(bytes.NewReader(data[:start+cut]), 0)
				s.piece = piece
				_, r, err := s.Next()
				if err != nil {
					t.Fatal(err)
				}
				got, err := readFrameIn(r, 1<<20)
				if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != cut {
					t.Fatalf("read %d of %d bytes, err = %v; want %v after %d", len(got), len(big), err, io.ErrUnexpectedEOF, cut)
				}
				if f, _, err := s.Next(); err == nil {
					t.Errorf("Next after the cut returned frame %+v", f)
				}
			})
		}
	}
}

// TestStreamPipeReuse reads large blob frames partly (the rest skipped by
// Next), wholly, and not at all, one after another on one stream: the
// stream's hash pieces are reused, so each frame must still be checked
// against its own bytes only.
func TestStreamPipeReuse(t *testing.T) {
	var frames []any
	var want []string
	for i := range 6 {
		b := strings.Repeat(string(rune('a'+i)), hashPiece*(i%3+2)+i)
		frames = append(frames, b)
		want = append(want, b)
	}
	s := NewStreamReader(bytes.NewReader(stream(t, frames...)), 0)
	for i := 0; ; i++ {
		_, r, err := s.Next()
		if err == io.EOF {
			if i != len(want) {
				t.Fatalf("stream ended after %d frames, want %d", i, len(want))
			}
			return
		}
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		switch i % 3 {
		case 0: // read a piece and a half, let Next skip the rest
			if _, err := io.ReadFull(r, make([]byte, hashPiece*3/2)); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
		case 1:
			got, err := readFrameIn(r, 10000)
			if err != nil || string(got) != want[i] {
				t.Fatalf("frame %d: %d bytes, %v", i, len(got), err)
			}
		}
	}
}

// TestStreamAbandonedFrame leaves a large blob frame half read: the
// hasher goroutine must not outlive the pieces it was given.
func TestStreamAbandonedFrame(t *testing.T) {
	base := runtime.NumGoroutine()
	s := NewStreamReader(bytes.NewReader(stream(t, strings.Repeat("z", 8*hashPiece))), 0)
	_, r, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, 3*hashPiece+1)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after abandoning the frame, %d before", runtime.NumGoroutine(), base)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWriteFrame writes frames from readers holding fewer, exactly and
// more bytes than announced, around the size of WriteFrame's copy buffer.
func TestWriteFrame(t *testing.T) {
	const buf = 1 << 20
	for _, size := range []int{0, 1, buf - 1, buf, buf + 1, 3*buf + 5} {
		for _, extra := range []int{-1, 0, 7} {
			if size+extra < 0 {
				continue
			}
			t.Run(fmt.Sprintf("size=%d/extra=%d", size, extra), func(t *testing.T) {
				src := bytes.Repeat([]byte{'w'}, size+extra)
				f := Frame{Kind: FrameBlob, Digest: digest.FromBytes(src[:min(size, len(src))]), Size: int64(size)}
				var out bytes.Buffer
				n, err := WriteFrame(&out, f, bytes.NewReader(src))
				if n != int64(out.Len()) {
					t.Errorf("WriteFrame = %d bytes, wrote %d", n, out.Len())
				}
				if extra < 0 {
					if !errors.Is(err, ErrBadFrame) {
						t.Fatalf("short reader: err = %v, want %v", err, ErrBadFrame)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if want := len(f.header()) + size; out.Len() != want {
					t.Fatalf("wrote %d bytes, want %d", out.Len(), want)
				}
			})
		}
	}
}
