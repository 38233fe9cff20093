package peers

import (
	"fmt"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

// The peers' variant names, in table order.
const (
	GoZero            = "go-zero"
	Rockscache        = "rockscache"
	Jetcache          = "jetcache"
	JetcacheLocal     = "jetcache+local"
	GoRedisCache      = "go-redis/cache"
	GoRedisCacheLocal = "go-redis/cache+local"
)

// LocalCached reports whether variant name serves hits from process
// memory (a local cache in front of Redis), which puts it outside the
// remote-only hit comparison.
func LocalCached(name string) bool {
	return name == JetcacheLocal || name == GoRedisCacheLocal
}

// HitVariants are the peers on the hit path: warm keys, read one at a time.
func HitVariants() []benchmarks.Variant {
	return []benchmarks.Variant{
		{Name: GoZero, Notes: "TakeCtx: singleflight, GET, encoding/json decode (+ re-encode for the shared result)",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoZero(s, 0) }},
		{Name: Rockscache, Notes: "Fetch2: singleflight, EVAL of its get script (two HGETs), encoding/json decode",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newRocks(s, 0, false) }},
		{Name: Jetcache, Notes: "Once, remote only: singleflight, GET, msgpack decode",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newJet(s, jetOptions{}) }},
		{Name: JetcacheLocal, Notes: "Once with FreeCache in front: hits served from process memory",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newJet(s, jetOptions{local: true}) }},
		{Name: GoRedisCache, Notes: "Once, remote only: singleflight, GET, s2 + msgpack decode",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoRedis(s, false, 0) }},
		{Name: GoRedisCacheLocal, Notes: "Once with TinyLFU in front: hits served from process memory",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoRedis(s, true, 0) }},
	}
}

// PenetrationVariants are the peers guarding against reads of absent ids.
// None has a Bloom filter in front of its cache; all but go-redis/cache
// cache "not found" (for p.NullTTL).
func PenetrationVariants(p benchmarks.PenetrationParams) []benchmarks.Variant {
	null := p.NullTTL
	return []benchmarks.Variant{
		{Name: GoZero, Notes: fmt.Sprintf("null cache (\"*\" for NotFoundExpiry=%v); no Bloom filter (core/bloom exists but is not wired into the cache)", null),
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoZero(s, null) }},
		{Name: Rockscache, Notes: fmt.Sprintf("null cache (empty string for EmptyExpire=%v); no Bloom filter", null),
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newRocks(s, null, false) }},
		{Name: Jetcache, Notes: fmt.Sprintf("null cache (errNotFound placeholder for notFoundExpiry=%v); no Bloom filter", null),
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newJet(s, jetOptions{nullTTL: null}) }},
		{Name: JetcacheLocal, Notes: "as jetcache, the placeholder also held in FreeCache",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) {
				return newJet(s, jetOptions{local: true, nullTTL: null})
			}},
		{Name: GoRedisCache, Notes: "no null caching, no Bloom filter: every read of an absent id loads",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoRedis(s, false, 0) }},
		{Name: GoRedisCacheLocal, Notes: "as go-redis/cache (the local cache holds values only)",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoRedis(s, true, 0) }},
	}
}

// BreakdownVariants are the peers rebuilding one hot key.
func BreakdownVariants(p benchmarks.BreakdownParams) []benchmarks.Variant {
	ri := refreshInterval(p.TTL)
	return []benchmarks.Variant{
		{Name: GoZero, Notes: "singleflight per process; no shared rebuild; TTL ±5% rounded up to whole seconds",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoZero(s, 0) }},
		{Name: Rockscache, Notes: "shared rebuild: lock in the Redis hash, waiters poll every 100 ms (LockSleep); no jitter",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newRocks(s, 0, true) }},
		{Name: Jetcache, Notes: fmt.Sprintf("Once + auto-refresh every %v, one process at a time (SETNX lock)", ri),
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newJet(s, jetOptions{refresh: true}) }},
		{Name: JetcacheLocal, Notes: fmt.Sprintf("as jetcache, with FreeCache (TTL %v) in front", localTTL(p.TTL)),
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) {
				return newJet(s, jetOptions{local: true, refresh: true})
			}},
		{Name: GoRedisCache, Notes: "singleflight per process (Once); no shared rebuild",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoRedis(s, false, 0) }},
		{Name: GoRedisCacheLocal, Notes: fmt.Sprintf("as go-redis/cache, with TinyLFU (TTL %v) in front", localTTL(p.TTL)),
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoRedis(s, true, 0) }},
	}
}

// HotKeyVariants are the peers read on a few hot keys: jetcache-go and
// go-redis/cache, remote only and with their local caches.
func HotKeyVariants() []benchmarks.Variant {
	var out []benchmarks.Variant
	for _, v := range HitVariants() {
		if v.Name != GoZero && v.Name != Rockscache {
			out = append(out, v)
		}
	}
	return out
}

// OutsideWriteVariants are the peers whose values are deleted (or
// overwritten, in outside_set) from outside:
// jetcache-go and go-redis/cache, remote only and with their local caches
// (entries living p.LocalTTL). Neither local cache hears of a change made
// by another client: jetcache-go's cross-process sync (WithSyncLocal)
// broadcasts only the writes made through it, and go-redis/cache has none.
func OutsideWriteVariants(p benchmarks.LocalInvalidationParams) []benchmarks.Variant {
	return []benchmarks.Variant{
		{Name: Jetcache, Notes: "Once, remote only",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newJet(s, jetOptions{}) }},
		{Name: JetcacheLocal, Notes: fmt.Sprintf("Once with FreeCache (TTL %v) in front; no sync of the local caches", p.LocalTTL),
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) {
				return newJet(s, jetOptions{local: true, localTTL: p.LocalTTL})
			}},
		{Name: GoRedisCache, Notes: "Once, remote only",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoRedis(s, false, 0) }},
		{Name: GoRedisCacheLocal, Notes: fmt.Sprintf("Once with TinyLFU (TTL %v) in front", p.LocalTTL),
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoRedis(s, true, p.LocalTTL) }},
	}
}

// localTTL is the lifetime of a local-cache entry: the READMEs' one minute,
// capped at the scenario's TTL so that a local copy cannot hide an expiry
// for longer than the value's own lifetime.
func localTTL(ttl time.Duration) time.Duration { return min(time.Minute, ttl) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
