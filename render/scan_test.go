package render

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScanFields(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
		want map[string]string // key -> decoded string value; "" = absent
	}{
		{`{"step":"s1","producer":{"provider":"p"}}`, true, map[string]string{"step": "s1"}},
		{` { "a" : [1, {"step":"no"}] , "step" : "s\"2" } `, true, map[string]string{"step": `s"2`}},
		{`{"step":"\u00e9\\"}`, true, map[string]string{"step": `é\`}},
		{`{"x":"a\\\"b","step":"ok"}`, true, map[string]string{"step": "ok"}},
		{`{"long":"` + string(make([]byte, 100)) + `","step":"z"}`, true, map[string]string{"step": "z"}},
		{`{}`, true, map[string]string{"step": ""}},
		// The scanner stops once it has what it wants; the rest of a kept
		// body is checked by its full decode.
		{`{"step":"s1"`, true, map[string]string{"step": "s1"}},
		{`{"other":"s1"`, false, nil},
		{`{"other":"s1",}`, false, nil},
		{`["step"]`, false, nil},
		{`{"a":tru,"step":"x"}`, false, nil},
		{`{"a":"unterminated}`, false, nil},
		{``, false, nil},
	}
	for _, tt := range tests {
		f := []field{{key: "step"}}
		ok := scanFields([]byte(tt.body), f)
		if ok != tt.ok {
			t.Errorf("scanFields(%q) ok = %v, want %v", tt.body, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		got, _ := rawString(f[0].raw)
		if d := cmp.Diff(tt.want["step"], got); d != "" {
			t.Errorf("scanFields(%q) step (-want +got):\n%s", tt.body, d)
		}
	}
}

// FuzzScanFields checks the scanner against encoding/json: whatever it
// extracts from a body encoding/json accepts is what encoding/json
// decodes, and it never panics.
func FuzzScanFields(f *testing.F) {
	f.Add([]byte(`{"call_id":"c\"1","step":"s","producer":{"model":"m"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fs := []field{{key: "call_id"}, {key: "step"}}
		ok := scanFields(body, fs)
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil || !ok {
			return
		}
		for _, fl := range fs {
			want, _ := rawString(m[fl.key])
			got, okGot := rawString(fl.raw)
			_, okWant := rawString(m[fl.key])
			if okGot != okWant || got != want {
				t.Fatalf("%s: scanner %q (%v), encoding/json %q (%v)", fl.key, got, okGot, want, okWant)
			}
		}
	})
}

var tcBody = []byte(`{"arguments":{"limit":200,"path":"/src/app/file0.go"},"call_id":"call_0","name":"read_file","producer":{"api":"messages","model":"claude-sonnet-4-6","provider":"anthropic"},"step":"s0"}`)

// BenchmarkReadHeader measures the header scan of one canonical tool call.
func BenchmarkReadHeader(b *testing.B) {
	for b.Loop() {
		readHeader("tool_call", tcBody)
	}
}
