package bloom

import (
	"context"
	"fmt"
	"math"

	"github.com/redis/go-redis/v9"
)

// Stats describes a filter as stored in Redis.
type Stats struct {
	// Bits is m, the filter's total size in bits (all shards).
	Bits int64
	// HashFunctions is k, the bits set per element.
	HashFunctions int
	// Shards is the number of shards (Redis keys per generation).
	Shards int
	// BitsSet is how many bits are set in the current generation.
	BitsSet int64
	// EstimatedCount estimates the distinct elements added, summed over
	// shards from −(m_s/k)·ln(1 − set_s/m_s) (Swamidass and Baldi).
	// Infinite if a shard is full.
	EstimatedCount float64
	// FalsePositiveRate estimates the current false-positive rate: the mean
	// over shards of (set_s/m_s)^k.
	FalsePositiveRate float64
	// Generation is the highest shard generation; each Rebuild adds one.
	Generation int64
	// Rebuilding reports whether a Rebuild is filling a next generation
	// (or one died without aborting; the next Rebuild takes it over).
	Rebuilding bool
	// UntrustedShards is how many shards are not known complete (never
	// filled by a Rebuild, or their keys were lost since): their checks
	// answer "maybe". 0 means Ready.
	UntrustedShards int

	// The counters below are this Filter's, since New, not the filter's in
	// Redis.

	// UntrustedChecks counts the keys that checks asked of an untrusted
	// shard, each answered "maybe" whatever its bits said.
	UntrustedChecks int64
	// AutoRebuilds counts the automatic rebuilds (Options.Source) this
	// Filter ran to the end.
	AutoRebuilds int64
	// AutoRebuildFailures counts the automatic rebuilds that failed, or
	// could not take their lease because Redis failed; each is retried by
	// a later check, RebuildInterval after the failed one started.
	AutoRebuildFailures int64
}

// Stats reads the filter's state, and this Filter's counters: one script
// per shard, pipelined. It runs
// BITCOUNT over every shard, O(m), a few milliseconds per MiB on the
// server: not for a hot path.
func (f *Filter) Stats(ctx context.Context) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	l := f.layout
	st := Stats{
		Bits:          int64(l.shardBits) * int64(l.shards),
		HashFunctions: l.k,
		Shards:        l.shards,
	}
	ms := float64(l.shardBits)
	if a := f.auto; a != nil {
		st.AutoRebuilds, st.AutoRebuildFailures = a.rebuilds.Load(), a.failures.Load()
	}
	st.UntrustedChecks = f.untrusted.Load()
	err := f.perShard(ctx, statsScript, []any{l.fingerprint, l.shardBits}, func(_ int, cmd *redis.Cmd) error {
		if err := cmd.Err(); err != nil {
			return f.mapScriptError(err)
		}
		v, err := cmd.Int64Slice()
		if err != nil || len(v) != 4 {
			return fmt.Errorf("bloom: filter %q: unexpected stats reply %v (%v)", f.name, v, err)
		}
		gen, set := v[0], v[1]
		st.Generation = max(st.Generation, gen)
		st.BitsSet += set
		st.Rebuilding = st.Rebuilding || v[2] == 1
		if v[3] != 1 {
			st.UntrustedShards++
		}
		fill := float64(set) / ms
		st.EstimatedCount += -ms / float64(l.k) * math.Log1p(-fill)
		st.FalsePositiveRate += math.Pow(fill, float64(l.k)) / float64(l.shards)
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	return st, nil
}
