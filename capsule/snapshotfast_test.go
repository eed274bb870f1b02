package capsule

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/agentcapsule/capsule/digest"
)

// slowDecode is ParseSnapshot's encoding/json path, without validation.
func slowDecode(b []byte) (*Snapshot, error) {
	s := &Snapshot{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errExtra
	}
	return s, nil
}

var errExtra = bytes.ErrTooLarge // any sentinel: only nil-ness matters

// checkFastPath fails t when the fast decoder accepts data that
// encoding/json decodes differently (or refuses), or when the fast
// encoder writes an entry otherwise than json.Marshal.
func checkFastPath(t fataler, data []byte) {
	fast, ok := decodeSnapshotFast(data)
	slow, err := slowDecode(data)
	if ok {
		if err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v):\n%q", err, data)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("fast path decoded %q otherwise (-json +fast):\n%s", data, diff)
		}
	}
	if err != nil {
		return
	}
	for _, e := range slow.Entries {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEntry(nil, e); !bytes.Equal(got, want) {
			t.Fatalf("entry %+v:\nfast %s\njson %s", e, got, want)
		}
	}
}

// fataler is what checkFastPath needs of a *testing.T or a *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

// FuzzSnapshotFastPath: the fast decoder accepts nothing encoding/json
// reads otherwise, and the fast encoder writes what json.Marshal writes.
// Run: go test ./capsule -fuzz FuzzSnapshotFastPath
func FuzzSnapshotFastPath(f *testing.F) {
	for _, s := range fastPathSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFastPath(t, data) })
}

var fastPathSeeds = []string{
	`{"version": 1, "entries": []}`,
	`{"version": 1, "entries": [
  {"path":"a/b.txt","type":"file","exec":true,"size":12,"blob":"sha256:` + string(make64('a')) + `"},
  {"path":"d","type":"dir"},
  {"path":"l","type":"symlink","target":"a/b.txt"}
]}
`,
	` { "entries" : [ { "type" : "dir" , "path" : "é/ü" } ] , "version" : 1 } `,
	`{"version": 1, "entries": [{"path":"a\u0062","type":"dir"}]}`, // escape: encoding/json decides
	`{"Version": 1, "entries": []}`,                                // another case
	`{"version": 1, "version": 2, "entries": []}`,                  // repeated
	`{"version": 1, "entries": [{"path":"a","path":"b","type":"dir"}]}`,
	`{"version": 1.0, "entries": []}`,
	`{"version": 01, "entries": []}`,
	`{"version": -0, "entries": []}`,
	`{"version": 1, "entries": null}`,
	`{"version": 1, "entries": [{"path":"a","type":"file","size":1e3}]}`,
	`{"version": 1, "entries": [{"path":"a","type":"file","size":9223372036854775808}]}`,
	`{"version": 1, "entries": [{"path":"a","type":"file","exec":null}]}`,
	`{"version": 1, "entries": [{"path":"a\xff","type":"dir"}]}`,
	`{"version": 1, "entries": [{"path":"a` + "\t" + `","type":"dir"}]}`,
	`{"version": 1, "entries": [{"path":"a","type":"dir"},]}`,
	`{"version": 1, "entries": []} x`,
	`{"version": 1, "entries": []}]`,
	`{"version": 1, "entries": [{"path":"a","type":"dir","extra":1}]}`,
	`{"version": 1, "entries": [{"path":"a","type":"file","exec":truex}]}`,
	`{"version": 1, "entries": [{"path":"a","type":"file","size":12}`,
}

func make64(c byte) []byte { return bytes.Repeat([]byte{c}, 64) }

func TestSnapshotFastPathSeeds(t *testing.T) {
	accepted := 0
	for _, s := range fastPathSeeds {
		checkFastPath(t, []byte(s))
		if _, ok := decodeSnapshotFast([]byte(s)); ok {
			accepted++
		}
	}
	if accepted < 3 { // the first three are the plain shape: the fast path must take them
		t.Fatalf("fast path accepted %d seeds", accepted)
	}
}

// TestSnapshotFastPathRoundTrip marshals random snapshots (paths with
// characters json.Marshal escapes, every entry kind) and checks the bytes
// against encoding/json's, and that the fast decoder reads them back.
func TestSnapshotFastPathRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.StringOfN(rapid.SampledFrom([]rune("ab/<>&\"\\é\u2028\x01 z.")), 1, 12, -1)
		entries := rapid.SliceOf(rapid.Custom(func(t *rapid.T) Entry {
			e := Entry{Path: str.Draw(t, "path"), Type: EntryType(rapid.SampledFrom([]string{"file", "dir", "symlink", "x<"}).Draw(t, "type"))}
			e.Exec = rapid.Bool().Draw(t, "exec")
			e.Size = rapid.Int64().Draw(t, "size")
			if rapid.Bool().Draw(t, "blob") {
				e.Blob = digest.Digest("sha256:" + string(make64('0'+byte(rapid.IntRange(0, 9).Draw(t, "d")))))
			}
			if rapid.Bool().Draw(t, "target") {
				e.Target = str.Draw(t, "target")
			}
			return e
		})).Draw(t, "entries")
		var b []byte
		b = append(b, `{"version": 1, "entries": [`...)
		for i, e := range entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n  "...)
			b = appendEntry(b, e)
		}
		b = append(b, "]}\n"...)
		checkFastPath(t, b)
		back, err := slowDecode(b)
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		if diff := cmp.Diff(entries, back.Entries); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}
