package journal

import (
	"bytes"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/google/go-cmp/cmp"

	"github.com/gowebpki/jcs"
)

// FuzzParseLine checks that any line either fails cleanly or parses into an
// event that re-encodes to exactly the same bytes and whose id checks out.
// Seed corpus: testdata/fuzz/FuzzParseLine.
func FuzzParseLine(f *testing.F) {
	for _, l := range linesOf(chainOf(f, 3)) {
		f.Add(l)
	}
	f.Add([]byte(`{"body":{},"clock":1,"epoch":0,"id":"sha256:00","kind":"user","machine":"m","seq":1,"v":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		line = withRightID(line)
		e, err := ParseLine(line)
		fast, ok := parseFast(line, nil)
		if ok && (err != nil || !cmp.Equal(fast, e)) {
			t.Fatalf("the fast path accepts %s as %+v, the general path says %+v, %v", line, fast, e, err)
		}
		if err != nil {
			return
		}
		if got := Encode(e); !bytes.Equal(got, line) {
			t.Fatalf("Encode(ParseLine(l)) = %s, want %s", got, line)
		}
		if id, err := ComputeID(&e); err != nil || id != e.ID {
			t.Fatalf("ComputeID = %s, %v; line id %s", id, err, e.ID)
		}
		if c, err := Canonicalize(line); err == nil && !bytes.Equal(c, line) {
			t.Fatalf("a parsed line is not canonical: %s", c)
		}
	})
}

// FuzzCanonicalize checks the canonicalizer against itself, the scanner
// and gowebpki/jcs. Seed corpus: testdata/fuzz/FuzzCanonicalize.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":[1.5,2e3,-0,"\u00e9\ud83d\ude00"],"a":{"y":null,"x":true}}`, `"\u2028"`, `[1e21,1e-7,123456789012345]`, `{"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := Canonicalize(src)
		scanErr := checkCanonical(src)
		if err != nil {
			if scanErr == nil {
				t.Fatalf("the scanner accepts %q, which Canonicalize refuses: %v", src, err)
			}
			return
		}
		if scanErr == nil && !bytes.Equal(c, src) {
			t.Fatalf("the scanner accepts %q, whose canonical form is %q", src, c)
		}
		if err := checkCanonical(c); err != nil {
			t.Fatalf("the scanner refuses the canonical form %q: %v", c, err)
		}
		if again, err := Canonicalize(c); err != nil || !bytes.Equal(again, c) {
			t.Fatalf("Canonicalize is not idempotent: %q -> %q (%v)", c, again, err)
		}
		if want, err := jcs.Transform(src); err == nil && !bytes.Equal(c, want) {
			t.Fatalf("Canonicalize(%q) = %q, gowebpki/jcs says %q", src, c, want)
		}
	})
}

// withRightID replaces the id of a line that has one of the right length by
// the hash of the rest, so the fuzzer explores what lies past the id check.
func withRightID(line []byte) []byte {
	var buf [16]span
	s := scanner{b: line}
	spans, err := s.topLevel(buf[:0])
	if err != nil {
		return line
	}
	for i, sp := range spans {
		if string(sp.name) != "id" || sp.end-sp.vstart != 2+71 {
			continue
		}
		a, b := withoutMember(line, spans, i)
		id := digestOf(append(bytes.Clone(a), b...))
		out := bytes.Clone(line)
		copy(out[sp.vstart+1:], id)
		return out
	}
	return line
}

func digestOf(b []byte) string { return string(digest.FromBytes(b)) }
