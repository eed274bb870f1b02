package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks that Parse never panics, and that whatever it accepts
// Marshal writes back into bytes that parse to the same manifest.
// Seeds: testdata/fuzz/FuzzParse. Run: go test ./manifest -fuzz FuzzParse
func FuzzParse(f *testing.F) {
	if b, err := example().Marshal(); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("accepted manifest does not marshal: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("marshalled manifest does not parse: %v\n%s", err, out)
		}
		if diff := cmp.Diff(m, back); diff != "" {
			t.Fatalf("round trip (-parsed +reparsed):\n%s", diff)
		}
	})
}
