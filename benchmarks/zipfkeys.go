package benchmarks

import "math/rand/v2"

// DefaultZipfS is the Zipf exponent of a keyspace (HotKeyParams.KeySpace,
// LocalInvalidationParams.KeySpace) whose Zipf field is not above 1.
const DefaultZipfS = 1.1

// zipfDrawBuf is how many keys a zipfKeys draws ahead.
const zipfDrawBuf = 4096

// zipfKeys hands out key indexes in [0, n) drawn from Zipf(s) (index i,
// of rank i+1, with probability ∝ (i+1)^-s), or in turn over [0, n) when
// s is 0. The draws are made ahead, a buffer at a time, and handed out in
// a cycle, so that a reader's loop pays a slice index per key, not a
// draw (a Zipf draw costs about as much as a near cache hit). One per
// goroutine: not safe for concurrent use.
type zipfKeys struct {
	buf []int
	i   int
}

// newZipfKeys returns the keys of goroutine seed over n keys: Zipf(s)
// when s > 0 (raised to DefaultZipfS when not above 1, math/rand/v2's
// bound), in turn from seed otherwise.
func newZipfKeys(n int, s float64, seed uint64) *zipfKeys {
	n = max(n, 1)
	if s <= 0 {
		buf := make([]int, n)
		for i := range buf {
			buf[i] = int((seed + uint64(i)) % uint64(n))
		}
		return &zipfKeys{buf: buf}
	}
	if s <= 1 {
		s = DefaultZipfS
	}
	buf := make([]int, zipfDrawBuf)
	if n == 1 {
		return &zipfKeys{buf: buf}
	}
	z := rand.NewZipf(rand.New(rand.NewPCG(seed, 0x5eed)), s, 1, uint64(n-1))
	for i := range buf {
		buf[i] = int(z.Uint64())
	}
	return &zipfKeys{buf: buf}
}

// next is the next key index.
func (z *zipfKeys) next() int {
	k := z.buf[z.i]
	if z.i++; z.i == len(z.buf) {
		z.i = 0
	}
	return k
}
