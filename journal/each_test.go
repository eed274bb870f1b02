package journal

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// eachAll collects what Each hands out, copying the bodies, and checks
// that each pos.Body points at the body in data.
func eachAll(t *testing.T, data []byte) ([]Event, error) {
	t.Helper()
	var got []Event
	err := Each(bytes.NewReader(data), func(e *Event, pos Pos) error {
		if at := data[pos.Body:]; !bytes.HasPrefix(at, e.Body) {
			t.Errorf("line %d: pos.Body %d does not point at the body", pos.Line, pos.Body)
		}
		c := *e
		c.Body, c.Raw = bytes.Clone(e.Body), bytes.Clone(e.Raw)
		got = append(got, c)
		return nil
	})
	return got, err
}

// TestEachMatchesDecode streams a journal long enough to span many batches
// and gets Decode's events, with every body located in the file.
func TestEachMatchesDecode(t *testing.T) {
	events := chainOf(t, 20000)
	unknown := []byte(`{"body":{"x":1},"clock":20001,"epoch":1,"id":"sha256:` + strings.Repeat("0", 64) + `","kind":"future","machine":"c","seq":1,"v":3,"zz":true}`)
	e := Event{Machine: "c", Seq: 1, Clock: 20001, Epoch: 1, V: 2, Kind: "future", Body: []byte(`{"x":1}`), Raw: unknown}
	id, err := ComputeID(&e)
	if err != nil {
		t.Fatal(err)
	}
	unknown = bytes.Replace(unknown, []byte("sha256:"+strings.Repeat("0", 64)), []byte(id), 1)
	data := append(join(linesOf(events)), append(unknown, '\n')...)
	want, err := Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got, err := eachAll(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Each differs from Decode (-Decode +Each):\n%s", diff)
	}
}

// TestEachStopsAtFirstBadLine: the events before the first bad line are
// handed out, then Decode's *LineError is returned; an error of visit is
// returned as it is.
func TestEachStopsAtFirstBadLine(t *testing.T) {
	lines := linesOf(chainOf(t, 5000))
	lines[3000] = []byte(`{"not":"an event"}`)
	data := join(lines)
	_, want := Decode(bytes.NewReader(data))
	got, err := eachAll(t, data)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3001 || err.Error() != want.Error() {
		t.Fatalf("Each: %v, want Decode's %v", err, want)
	}
	if len(got) != 3000 {
		t.Errorf("Each handed out %d events before the bad line, want 3000", len(got))
	}
	stop := errors.New("stop")
	n := 0
	err = Each(bytes.NewReader(data), func(*Event, Pos) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Errorf("Each after visit failed: %v after %d events, want stop after 10", err, n)
	}
}
