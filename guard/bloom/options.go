package bloom

import (
	"fmt"
	"math"
	"time"
)

// Limits of the sizing that New accepts.
const (
	// MaxShardBits bounds a shard, in bits: Redis's 512 MB string limit. A
	// shard holds fewer than MaxShardBits bits, since its bitmap also holds
	// the completeness marker right after them.
	MaxShardBits = 1 << 32
	// DefaultShardBits is the shard size the default Shards aims for:
	// 2^26 bits, 8 MiB.
	DefaultShardBits = 1 << 26
	// MaxShards is the most shards a filter may have.
	MaxShards = 1 << 16
	// MaxHashFunctions is the largest k that New accepts; a smaller
	// FalsePositiveRate than that implies is refused.
	MaxHashFunctions = 64
)

// Options size a filter and set up its automatic rebuild. Every process
// that opens a filter by the same name and namespace must pass the same
// Capacity, FalsePositiveRate and Shards: the sizing decides where an
// element's bits are. A filter whose stored sizing differs answers
// ErrLayoutMismatch rather than wrong results. Source, RebuildInterval and
// RebuildLease are each process's own.
type Options struct {
	// Namespace prefixes every key. Default "ak".
	Namespace string

	// Capacity is n, the number of elements the filter is sized for.
	// Required, > 0. Past it the false-positive rate climbs above
	// FalsePositiveRate; Stats shows by how much.
	Capacity int64

	// FalsePositiveRate is p, the target probability that an element never
	// added reads as present once Capacity elements are in. Required, in
	// (0, 1).
	FalsePositiveRate float64

	// Shards is the number of Redis keys the bits are split over (one
	// bitmap per shard and generation). Default: m / 2^26 rounded up, so that
	// each shard holds at most 8 MiB, far below Redis's 512 MB string limit,
	// and so that SETBIT growth, BITCOUNT and UNLINK of one shard stay cheap.
	// More shards spread a big filter over more Cluster slots. A value that
	// makes a shard pass 2^32 bits (512 MB) is an error, as is one above
	// MaxShards.
	Shards int

	// Source streams every key that belongs in the filter, as Rebuild's
	// source does (typically every id of a table). When set, a check
	// (MightContain, MightContainMany, Ready) that meets an untrusted shard
	// (see the package doc) starts an automatic Rebuild from Source in the
	// background, under a Redis lease, so that one process rebuilds while
	// the others keep answering "maybe". Default nil: untrusted shards
	// answer "maybe" until someone calls Rebuild.
	Source Source

	// RebuildInterval is the least time between two automatic rebuilds
	// started by one Filter, whatever became of the first (done, failed, or
	// another process held the lease): a failing Source is retried by a
	// later check, at most once per RebuildInterval. Default 10 seconds.
	// Used only with Source; negative is an error.
	RebuildInterval time.Duration

	// RebuildLease is how long the Redis lease of an automatic rebuild lives
	// without renewal. The rebuilding process renews it every third of it
	// and releases it when done or failed; if the process dies, another one
	// may start over RebuildLease later. Default 30 seconds. Used only with
	// Source; negative or under a millisecond is an error.
	RebuildLease time.Duration
}

// Defaults of the automatic rebuild.
const (
	defaultRebuildInterval = 10 * time.Second
	defaultRebuildLease    = 30 * time.Second
)

// layout is the derived, immutable placement of a filter's bits.
type layout struct {
	k         int    // hash functions
	shards    int    // number of shards
	shardBits uint64 // bits per shard, a multiple of 8
	// fingerprint is stored with each shard and checked by every script,
	// so that differently sized filters never read each other's bits.
	fingerprint string
}

// size computes m = −n·ln p / (ln 2)² and k = round(m/n · ln 2).
func size(n int64, p float64) (m float64, k int) {
	m = math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
	k = int(math.Round(m / float64(n) * math.Ln2))
	return m, max(k, 1)
}

func newLayout(o Options) (layout, error) {
	if o.Capacity <= 0 {
		return layout{}, fmt.Errorf("%w: Capacity %d, it must be > 0", ErrInvalid, o.Capacity)
	}
	p := o.FalsePositiveRate
	if !(p > 0 && p < 1) { // also refuses NaN
		return layout{}, fmt.Errorf("%w: FalsePositiveRate %v, it must be in (0, 1)", ErrInvalid, p)
	}
	if o.Shards < 0 || o.Shards > MaxShards {
		return layout{}, fmt.Errorf("%w: Shards %d, it must be in [0, %d]", ErrInvalid, o.Shards, MaxShards)
	}
	m, k := size(o.Capacity, p)
	if k > MaxHashFunctions {
		return layout{}, fmt.Errorf("%w: FalsePositiveRate %v needs %d hash functions, the limit is %d", ErrInvalid, p, k, MaxHashFunctions)
	}
	shards := o.Shards
	if shards == 0 {
		d := math.Ceil(m / DefaultShardBits)
		if d > MaxShards {
			return layout{}, fmt.Errorf("%w: %.0f bits (%.1f GiB) would need %.0f shards of 8 MiB, the limit is %d shards",
				ErrInvalid, m, m/8/(1<<30), d, MaxShards)
		}
		shards = int(d)
	}
	perShard := math.Ceil(m/float64(shards)/8) * 8
	if perShard >= MaxShardBits { // the marker bit goes at offset perShard
		return layout{}, fmt.Errorf("%w: %d shards of %.0f bits (%.1f MiB) each would pass Redis's 512 MB string limit; use at least %.0f shards",
			ErrInvalid, shards, perShard, perShard/8/(1<<20), math.Ceil(m/MaxShardBits))
	}
	l := layout{k: k, shards: shards, shardBits: uint64(perShard)}
	l.fingerprint = fmt.Sprintf("murmur3-128/v1 k=%d bits=%d shards=%d", l.k, l.shardBits, l.shards)
	return l, nil
}
