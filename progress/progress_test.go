package progress_test

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/progress"
)

// use drives a bar through every method, moving data through Reader and
// Writer, and checks that the data arrives unchanged.
func use(t *testing.T, b *progress.Bar) {
	t.Helper()
	b.Describe("working")
	b.Add(10)
	b.SetTotal(1 << 20)
	var sink bytes.Buffer
	data := strings.Repeat("x", 1<<19)
	n, err := io.Copy(b.Writer(&sink), b.Reader(strings.NewReader(data)))
	if err != nil || n != int64(len(data)) || sink.String() != data {
		t.Errorf("copy through the bar: n=%d err=%v, data changed=%v", n, err, sink.String() != data)
	}
	b.Finish()
	b.Finish()
	b.Add(1)
}

func TestQuietOnBuffer(t *testing.T) {
	var buf bytes.Buffer
	use(t, progress.New(&buf, "export", 100, false))
	if buf.Len() != 0 {
		t.Errorf("bar on a bytes.Buffer wrote %q", buf.String())
	}
}

func TestQuietOnPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	use(t, progress.New(w, "export", 100, false))
	w.Close()
	got, err := io.ReadAll(r)
	if err != nil || len(got) != 0 {
		t.Errorf("bar on a pipe wrote %q (%v)", got, err)
	}
}

func TestNilBar(t *testing.T) {
	var b *progress.Bar
	use(t, b)
	r := strings.NewReader("x")
	if b.Reader(r) != r {
		t.Errorf("nil bar wraps its reader")
	}
	var w bytes.Buffer
	if b.Writer(&w) != &w {
		t.Errorf("nil bar wraps its writer")
	}
}

func TestQuietPassesThrough(t *testing.T) {
	b := progress.New(os.Stderr, "x", 1, true)
	r := strings.NewReader("x")
	if b.Reader(r) != r {
		t.Errorf("quiet bar wraps its reader")
	}
}
