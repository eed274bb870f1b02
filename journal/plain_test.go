package journal

import (
	"math/rand/v2"
	"testing"
)

// TestSkipPlainMatchesTable pins the word-at-a-time and windowed string
// scan to its definition, the plain table read byte by byte, on texts of
// every length around the word and window sizes, with the bytes where the
// SWAR tests could go wrong (0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xff) at
// every position. Seed 1, 2; replay with go test -run TestSkipPlainMatchesTable.
func TestSkipPlainMatchesTable(t *testing.T) {
	slow := func(b []byte, i int) int {
		for i < len(b) && plain[b[i]] {
			i++
		}
		return i
	}
	odd := []byte{0x00, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xc3, 0xff, '!', '#', '[', ']'}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		size := rng.IntN(3 * plainWindow)
		b := make([]byte, size)
		for k := range b {
			b[k] = 'a' + byte(rng.IntN(26))
		}
		for k := rng.IntN(3); k > 0 && size > 0; k-- {
			b[rng.IntN(size)] = odd[rng.IntN(len(odd))]
		}
		i := 0
		if size > 0 {
			i = rng.IntN(size + 1)
		}
		if got, want := skipPlain(b, i), slow(b, i); got != want {
			t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, i, got, want)
		}
	}
}
