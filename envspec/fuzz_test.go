package envspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks that Parse never panics, that an error never contains a
// credential-looking token from the input, and that an accepted spec
// marshals back to bytes that parse to the same spec.
// Seeds: testdata/fuzz/FuzzParse. Run: go test ./envspec -fuzz FuzzParse
func FuzzParse(f *testing.F) {
	if b, err := example().Marshal(); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			for _, tok := range tokenRun.FindAllString(string(data), -1) {
				if tokenReason(tok) != "" && strings.Contains(err.Error(), tok) {
					t.Fatalf("error echoes a credential-looking token: %v", err)
				}
			}
			return
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("accepted spec does not marshal: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("marshalled spec does not parse: %v\n%s", err, out)
		}
		if diff := cmp.Diff(s.normalized(), back); diff != "" {
			t.Fatalf("round trip (-parsed +reparsed):\n%s", diff)
		}
	})
}
