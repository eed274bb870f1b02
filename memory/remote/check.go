package remote

import (
	"errors"
	"fmt"
	"math"
)

// ErrMalformed is wrapped by the error of an answer that cannot be used:
// not JSON, cut short, a vector missing, of the wrong length, not finite
// or zero.
var ErrMalformed = errors.New("malformed answer")

// malformed is the error of an unusable answer from p: what was wrong.
func malformed(p Provider, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", p, ErrMalformed, fmt.Sprintf(format, args...))
}

// accept checks an answer of n texts and L2-normalises its vectors in
// place.
func (e *embedder) accept(vecs [][]float32, n int) error {
	if len(vecs) != n {
		return malformed(e.cfg.Provider, "%d vectors for %d texts", len(vecs), n)
	}
	for i, v := range vecs {
		if len(v) != e.id.Dims {
			return malformed(e.cfg.Provider, "vector %d has %d values, want %d", i, len(v), e.id.Dims)
		}
		if err := normalize(v); err != nil {
			return malformed(e.cfg.Provider, "vector %d: %v", i, err)
		}
	}
	return nil
}

// normalize scales v to unit L2 norm. The sum is taken in float64, each
// product rounded before it is added (the explicit conversion forbids a
// fused multiply-add), so every machine computes the same bits.
func normalize(v []float32) error {
	var sum float64
	for k, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("value %d is %v", k, x)
		}
		sum += float64(f * f)
	}
	if sum == 0 {
		return errors.New("zero vector")
	}
	norm := math.Sqrt(sum)
	for k, x := range v {
		v[k] = float32(float64(x) / norm)
	}
	return nil
}
