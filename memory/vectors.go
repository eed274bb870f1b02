package memory

import (
	"encoding/base64"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// The data types of stored vectors (FORMAT §11.7.2). An index stores int8
// for an embedder whose vectors have unit norm and float16 otherwise.
const (
	DTypeInt8    = "int8"
	DTypeFloat16 = "float16"
)

// vectors holds the index's vectors in one flat slice, int8 or float32 (a
// float16 index is held widened), dims values per chunk.
type vectors struct {
	dims  int
	dtype string
	q     []int8
	f     []float32
}

func newVectors(dims int, dtype string, n int) vectors {
	v := vectors{dims: dims, dtype: dtype}
	if dtype == DTypeInt8 {
		v.q = make([]int8, 0, n*dims)
	} else {
		v.f = make([]float32, 0, n*dims)
	}
	return v
}

// add appends one vector as computed by an embedder.
func (v *vectors) add(x []float32) {
	if v.dtype == DTypeInt8 {
		v.q = appendInt8(v.q, x)
		return
	}
	for _, f := range x {
		v.f = append(v.f, halfToFloat(floatToHalf(f)))
	}
}

// appendInt8 quantises a unit vector: round(x·127), clamped to ±127.
func appendInt8(dst []int8, x []float32) []int8 {
	for _, f := range x {
		r := math.Round(float64(f) * 127)
		dst = append(dst, int8(max(-127, min(127, r))))
	}
	return dst
}

// addStored appends one vector as the file stores it (base64).
func (v *vectors) addStored(s string) error {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return fmt.Errorf("vector: %w", err)
	}
	want := v.dims
	if v.dtype == DTypeFloat16 {
		want *= 2
	}
	if len(b) != want {
		return fmt.Errorf("vector: %d bytes, want %d", len(b), want)
	}
	if v.dtype == DTypeInt8 {
		for _, c := range b {
			v.q = append(v.q, int8(c))
		}
		return nil
	}
	for i := 0; i < len(b); i += 2 {
		v.f = append(v.f, halfToFloat(uint16(b[i])|uint16(b[i+1])<<8))
	}
	return nil
}

// appendStored appends the base64 of vector i to dst.
func (v *vectors) appendStored(dst []byte, i int) []byte {
	raw := make([]byte, 0, 2*v.dims)
	if v.dtype == DTypeInt8 {
		for _, c := range v.q[i*v.dims : (i+1)*v.dims] {
			raw = append(raw, byte(c))
		}
	} else {
		for _, f := range v.f[i*v.dims : (i+1)*v.dims] {
			h := floatToHalf(f)
			raw = append(raw, byte(h), byte(h>>8))
		}
	}
	return base64.StdEncoding.AppendEncode(dst, raw)
}

// query prepares a query vector for scores against every stored vector.
type query struct {
	q []int32
	f []float32
	// nz and nzv are the query's nonzero int8 values and where they are: a
	// short query sets few of the dimensions, and only those can add.
	nz, nzv []int32
}

func (v *vectors) prepare(x []float32) query {
	if v.dtype == DTypeInt8 {
		q := appendInt8(nil, x)
		out := query{q: make([]int32, len(q))}
		for i, c := range q {
			out.q[i] = int32(c)
			if c != 0 {
				out.nz, out.nzv = append(out.nz, int32(i)), append(out.nzv, int32(c))
			}
		}
		return out
	}
	return query{f: x}
}

// parallelMin is the number of vectors above which scoreAll splits the
// scan over every core.
const parallelMin = 16384

// scoreAll returns the dot product of the query with each of the first n
// vectors, in out when it is long enough.
func (v *vectors) scoreAll(q query, n int, out []float64) []float64 {
	if cap(out) < n {
		out = make([]float64, n)
	}
	out = out[:n]
	workers := min(runtime.GOMAXPROCS(0), max(1, n/parallelMin))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Go(func() {
			i := lo
			if v.dtype == DTypeInt8 {
				for ; i+4 <= hi; i += 4 {
					d := v.dims
					a, b, c, e := dot4Int8(q, v.q[i*d:(i+1)*d], v.q[(i+1)*d:(i+2)*d], v.q[(i+2)*d:(i+3)*d], v.q[(i+3)*d:(i+4)*d])
					out[i], out[i+1], out[i+2], out[i+3] = a, b, c, e
				}
			}
			for ; i < hi; i++ {
				out[i] = v.score(q, i)
			}
		})
	}
	wg.Wait()
	return out
}

// score returns the dot product of the query with vector i.
func (v *vectors) score(q query, i int) float64 {
	if v.dtype == DTypeInt8 {
		return float64(dotInt8(q.q, v.q[i*v.dims:(i+1)*v.dims])) / (127 * 127)
	}
	var s float64
	for j, f := range v.f[i*v.dims : (i+1)*v.dims] {
		s += float64(f) * float64(q.f[j])
	}
	return s
}

func dotInt8(q []int32, x []int8) int32 {
	x = x[:len(q)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+8 <= len(q); i += 8 {
		qq, xx := q[i:i+8:i+8], x[i:i+8:i+8]
		s0 += qq[0]*int32(xx[0]) + qq[4]*int32(xx[4])
		s1 += qq[1]*int32(xx[1]) + qq[5]*int32(xx[5])
		s2 += qq[2]*int32(xx[2]) + qq[6]*int32(xx[6])
		s3 += qq[3]*int32(xx[3]) + qq[7]*int32(xx[7])
	}
	for ; i < len(q); i++ {
		s0 += q[i] * int32(x[i])
	}
	return s0 + s1 + s2 + s3
}

// dot4Int8 is the dot product of q with four vectors at once, over the
// query's nonzero values, loading each once for the four.
func dot4Int8(q query, a, b, c, d []int8) (float64, float64, float64, float64) {
	n := len(q.q)
	a, b, c, d = a[:n], b[:n], c[:n], d[:n]
	var sa, sb, sc, sd int32
	vals := q.nzv[:len(q.nz)]
	for k, j := range q.nz {
		qj := vals[k]
		sa += qj * int32(a[j])
		sb += qj * int32(b[j])
		sc += qj * int32(c[j])
		sd += qj * int32(d[j])
	}
	const scale = 127 * 127
	return float64(sa) / scale, float64(sb) / scale, float64(sc) / scale, float64(sd) / scale
}

// floatToHalf converts to IEEE 754 binary16, rounding to nearest even.
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	man := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 0x1f: // overflow and infinity
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero
		if exp < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint(14 - exp)
		half := man >> shift
		rem := man & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || rem == mid && half&1 == 1 {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && half&1 == 1 {
		half++ // may carry into the exponent, which is right
	}
	return sign | uint16(half)
}

// halfToFloat converts IEEE 754 binary16 to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h >> 10 & 0x1f)
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		f := float32(man) / (1 << 24)
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}
