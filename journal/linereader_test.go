package journal

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// A few lines read from a reader that tells its length get a buffer of
// their size: events alias it, and the node decodes each step's new
// events, so a 256 KiB buffer per decode stayed live per agent.
func TestLineReaderSizesBufferToKnownInput(t *testing.T) {
	small := []byte(strings.Repeat(`{"kind":"user"}`+"\n", 3))
	large := []byte(strings.Repeat(`{"kind":"user","body":"`+strings.Repeat("x", 100)+`"}`+"\n", 6000))
	for _, tc := range []struct {
		name   string
		data   []byte
		reader func([]byte) io.Reader
		maxCap int // 0: not checked
	}{
		{"small bytes.Reader", small, func(b []byte) io.Reader { return bytes.NewReader(b) }, len(small) + 1},
		{"large bytes.Reader", large, func(b []byte) io.Reader { return bytes.NewReader(b) }, 0},
		{"length unknown", large, func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := lineReader{r: tc.reader(tc.data), line: 1, free: make(chan *batch, 1)}
			var got []byte
			for {
				b, err := lr.next()
				if err != nil {
					t.Fatal(err)
				}
				if b == nil {
					break
				}
				if tc.maxCap > 0 && cap(b.buf) > tc.maxCap {
					t.Errorf("batch buffer cap %d for %d bytes of input, want at most %d", cap(b.buf), len(tc.data), tc.maxCap)
				}
				got = append(got, b.data...)
			}
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("read %d bytes, want the %d of the input", len(got), len(tc.data))
			}
		})
	}
}
