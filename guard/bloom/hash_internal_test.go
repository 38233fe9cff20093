package bloom

import (
	"fmt"
	"math"
	"math/bits"
	"testing"
)

// Published MurmurHash3 x64 128 vectors (seed 0), also cross-checked
// against a reference implementation on random inputs of every length
// 0..199 when this file was written.
func TestMurmur3_vectors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		h1, h2 uint64
	}{
		{"", 0, 0},
		{"hello", 0xcbd8a7b341bd9b02, 0x5b1e906a48ae1d19},
		{"The quick brown fox jumps over the lazy dog", 0xe34bbc7bbc071b6c, 0x7a433ca9c49a9347},
		{"user:42", 0xcd01081bf0aa3a68, 0x8137b06702a290dd},
	} {
		h1, h2 := murmur3(tc.in)
		if h1 != tc.h1 || h2 != tc.h2 {
			t.Errorf("murmur3(%q) = %#x, %#x; want %#x, %#x", tc.in, h1, h2, tc.h1, tc.h2)
		}
	}
}

// TestLayout_locate_stable pins where elements go. If it fails, filters
// written by an earlier version would read wrongly: never "fix" the
// expectations, fix the code (or bump the fingerprint version and say so).
func TestLayout_locate_stable(t *testing.T) {
	l, err := newLayout(Options{Capacity: 100_000, FalsePositiveRate: 0.01, Shards: 16})
	if err != nil {
		t.Fatal(err)
	}
	if l.fingerprint != "murmur3-128/v1 k=7 bits=59912 shards=16" {
		t.Fatalf("fingerprint = %q", l.fingerprint)
	}
	for _, tc := range []struct {
		key   string
		shard int
		pos   string
	}{
		{"42", 10, "[57116 36871 7659 47329 18122 57799 28601]"},
		{"user:42", 4, "[21992 38829 46699 3627 11502 28349 36233]"},
		{"ORD2026112900001", 5, "[24388 51512 18725 45852 13070 40204 7431]"},
	} {
		shard, pos := l.locate(tc.key, nil)
		if shard != tc.shard || fmt.Sprint(pos) != tc.pos {
			t.Errorf("locate(%q) = %d %v; want %d %s", tc.key, shard, pos, tc.shard, tc.pos)
		}
	}
}

// locate follows the documented formula: shard = hi64(fmix64(a^b)·shards),
// bit i = (a + i·b + (i³−i)/6) mod bitsPerShard.
func TestLayout_locate_formula(t *testing.T) {
	l, err := newLayout(Options{Capacity: 5000, FalsePositiveRate: 0.001, Shards: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		key := fmt.Sprintf("k%d", i)
		a, b := murmur3(key)
		hi, _ := bits.Mul64(fmix64(a^b), 7)
		shard, pos := l.locate(key, nil)
		if shard != int(hi) || len(pos) != l.k {
			t.Fatalf("locate(%q) shard %d (%d bits); want %d (%d)", key, shard, len(pos), hi, l.k)
		}
		for j, p := range pos {
			u := uint64(j)
			if want := (a + u*b + (u*u*u-u)/6) % l.shardBits; p != want {
				t.Fatalf("locate(%q) bit %d = %d, want %d", key, j, p, want)
			}
		}
	}
}

// Elements spread evenly over shards and over the bits of a shard.
func TestLayout_locate_uniform(t *testing.T) {
	l, err := newLayout(Options{Capacity: 1000, FalsePositiveRate: 0.01, Shards: 10})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	shards := make([]int, l.shards)
	buckets := make([]int, 16) // bit offset range split in 16
	var pos []uint64
	for i := 0; i < n; i++ {
		var s int
		s, pos = l.locate(fmt.Sprintf("id-%d", i), pos[:0])
		shards[s]++
		for _, p := range pos {
			if p >= l.shardBits {
				t.Fatalf("offset %d outside shard of %d bits", p, l.shardBits)
			}
			buckets[p*16/l.shardBits]++
		}
	}
	check := func(what string, counts []int) {
		t.Helper()
		total := 0
		for _, c := range counts {
			total += c
		}
		want := float64(total) / float64(len(counts))
		for i, c := range counts {
			// 6 standard deviations of a binomial count: never fails by chance.
			if math.Abs(float64(c)-want) > 6*math.Sqrt(want) {
				t.Errorf("%s %d holds %d, want about %.0f", what, i, c, want)
			}
		}
	}
	check("shard", shards)
	check("bit range", buckets)
}

func TestNewLayout_sizing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      Options
		k, shards int
		shardBits uint64
	}{
		// m = ceil(100000·ln(100)/ln²2) = 958506, k = round(9.585·0.693) = 7.
		{"one default shard", Options{Capacity: 100_000, FalsePositiveRate: 0.01}, 7, 1, 958512},
		{"explicit shards", Options{Capacity: 100_000, FalsePositiveRate: 0.01, Shards: 16}, 7, 16, 59912},
		// m = 9585058378 bits: 143 default shards of at most 2^26 bits.
		{"big default", Options{Capacity: 1_000_000_000, FalsePositiveRate: 0.01}, 7, 143, 67028384},
		// p = 0.5: m = ceil(n·1.4427) = 1443, k = round(1.4427·0.693) = 1.
		{"p one half", Options{Capacity: 1000, FalsePositiveRate: 0.5}, 1, 1, 1448},
		{"tiny p", Options{Capacity: 10, FalsePositiveRate: 1e-12}, 40, 1, 576},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := newLayout(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if l.k != tc.k || l.shards != tc.shards || l.shardBits != tc.shardBits {
				t.Errorf("k=%d shards=%d bits/shard=%d; want %d %d %d", l.k, l.shards, l.shardBits, tc.k, tc.shards, tc.shardBits)
			}
			if l.shardBits%8 != 0 || l.shardBits > DefaultShardBits && tc.opts.Shards == 0 {
				t.Errorf("bits per shard %d: not whole bytes or over the default", l.shardBits)
			}
			m, _ := size(tc.opts.Capacity, tc.opts.FalsePositiveRate)
			if float64(l.shardBits)*float64(l.shards) < m {
				t.Errorf("%d×%d bits < m = %.0f", l.shards, l.shardBits, m)
			}
		})
	}
}

func BenchmarkLocate(b *testing.B) {
	l, _ := newLayout(Options{Capacity: 1_000_000, FalsePositiveRate: 0.01, Shards: 8})
	var pos []uint64
	for b.Loop() {
		_, pos = l.locate("user:1234567890", pos[:0])
	}
}
