package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

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
// panic, and every blob frame it accepts must hash to its digest.
func FuzzStream(f *testing.F) {
	f.Add(stream(f, "a", "bb", Frame{Kind: FrameJournal, Count: 1, Size: 2}))
	f.Add([]byte(StreamMagic))
	f.Add([]byte(StreamMagic + "blob sha256:00 5\nabc"))
	f.Add([]byte(StreamMagic + "message 2\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewStreamReader(bytes.NewReader(data), 1<<16)
		for i := 0; i < 100; i++ {
			fr, r, err := s.Next()
			if err != nil {
				return
			}
			b, err := io.ReadAll(r)
			if err != nil {
				return
			}
			if int64(len(b)) != fr.Size || fr.Kind == FrameBlob && digest.FromBytes(b) != fr.Digest {
				t.Fatalf("accepted frame %+v with %d bytes hashing to %s", fr, len(b), digest.FromBytes(b))
			}
		}
	})
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
