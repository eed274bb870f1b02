package capsule

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseSnapshot checks that ParseSnapshot never panics or loops, and
// that an accepted snapshot marshals back to bytes that parse to the same
// snapshot, with no link leaving the tree.
// Seeds: testdata/fuzz/FuzzParseSnapshot. Run: go test ./capsule -fuzz FuzzParseSnapshot
func FuzzParseSnapshot(f *testing.F) {
	f.Add([]byte(`{"version": 1, "entries": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSnapshot(data)
		if err != nil {
			return
		}
		links := map[string]string{}
		for _, e := range s.Entries {
			if e.Type == TypeSymlink {
				links[e.Path] = e.Target
			}
		}
		for p := range links {
			if escapes(links, p) {
				t.Fatalf("accepted a link that leaves the tree: %s", p)
			}
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("accepted snapshot does not marshal: %v", err)
		}
		back, err := ParseSnapshot(out)
		if err != nil {
			t.Fatalf("marshalled snapshot does not parse: %v\n%s", err, out)
		}
		if diff := cmp.Diff(s, back); diff != "" {
			t.Fatalf("round trip:\n%s", diff)
		}
	})
}
