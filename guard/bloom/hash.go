package bloom

import "math/bits"

// The hash is MurmurHash3 x64 128 (Austin Appleby, public domain) with seed
// 0, written out here so that it can never change under the filter: the
// bits a filter sets today must be the bits the next release reads. The
// test file pins it to published vectors and pins the derived positions.
//
// From the two 64-bit halves (a, b) of the hash of an element:
//
//	shard     = hi64(fmix64(a ^ b) * shards)          (fast range reduction)
//	bit i     = x_i mod bitsPerShard, for i = 0..k-1, where
//	x_0 = a, y_0 = b, x_{i+1} = x_i + y_i, y_{i+1} = y_i + i + 1  (mod 2^64)
//
// the "enhanced double hashing" of Dillinger and Manolios, which avoids the
// short cycles plain a + i·b has when b shares factors with the shard size.
// All k bits of an element fall in its one shard.

const (
	m3c1 = 0x87c37b91114253d5
	m3c2 = 0x4cf5ad432745937f
)

// murmur3 returns the 128-bit MurmurHash3 x64 of s with seed 0, as its two
// 64-bit halves in the reference implementation's order.
func murmur3(s string) (h1, h2 uint64) {
	n := len(s)
	i := 0
	for ; i+16 <= n; i += 16 {
		k1 := le64(s[i:])
		k2 := le64(s[i+8:])

		k1 *= m3c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= m3c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729

		k2 *= m3c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= m3c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}

	tail := s[i:]
	var k1, k2 uint64
	for j := len(tail) - 1; j >= 8; j-- {
		k2 ^= uint64(tail[j]) << (8 * (j - 8))
	}
	if len(tail) > 8 {
		k2 *= m3c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= m3c1
		h2 ^= k2
	}
	for j := min(len(tail), 8) - 1; j >= 0; j-- {
		k1 ^= uint64(tail[j]) << (8 * j)
	}
	if len(tail) > 0 {
		k1 *= m3c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= m3c2
		h1 ^= k1
	}

	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

func le64(s string) uint64 {
	_ = s[7] // one bounds check
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// fmix64 is MurmurHash3's finaliser: a bijection with full avalanche.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// locate returns the shard of key and appends its k bit offsets (within
// that shard) to dst.
func (l *layout) locate(key string, dst []uint64) (int, []uint64) {
	a, b := murmur3(key)
	shard, _ := bits.Mul64(fmix64(a^b), uint64(l.shards))
	x, y := a, b
	for i := 0; i < l.k; i++ {
		dst = append(dst, x%l.shardBits)
		x += y
		y += uint64(i + 1)
	}
	return int(shard), dst
}
