package benchmarks

import (
	"reflect"
	"strings"
	"time"
)

// Load is how many processes a scenario simulates and how many goroutines
// each runs.
type Load struct {
	// Instances is the number of simulated processes, each with its own
	// Redis client and cache instance. Default 1 when zero.
	Instances int `json:"instances"`
	// Goroutines is the number of concurrent callers in each process.
	// Default 1 when zero.
	Goroutines int `json:"goroutines_per_instance"`
}

func (l Load) norm() Load {
	return Load{Instances: max(l.Instances, 1), Goroutines: max(l.Goroutines, 1)}
}

func (l Load) workers() int { n := l.norm(); return n.Instances * n.Goroutines }

// HitParams size the hit scenario: one goroutine reads warm keys in a loop,
// so that ns/op is one round trip plus the decode.
type HitParams struct {
	// Keys is the number of distinct cached keys read in turn.
	Keys int `json:"keys"`
	// Ops is the number of reads per variant and value size, split over
	// Rounds batches; each batch runs every variant back to back.
	Ops int `json:"ops"`
	// Rounds is the number of batches; ns_per_op is a variant's median
	// batch and ratio the median of its per-batch ratios. Default 5 when
	// zero.
	Rounds int `json:"rounds"`
	// ValueSizes are the approximate JSON sizes of the cached values, in
	// bytes. Default {200, 4096} when empty.
	ValueSizes []int `json:"value_bytes"`
}

// PenetrationParams size the penetration scenario.
type PenetrationParams struct {
	Load
	// Rows is the number of users rows that exist (ids 1..Rows); the Bloom
	// filter is warmed with them.
	Rows int `json:"rows"`
	// AbsentIDs is D, the number of distinct ids that exist nowhere.
	AbsentIDs int `json:"absent_ids"`
	// Reads is R, the number of reads: R/D passes over the absent ids (each
	// id read the same number of times), rounded up to whole passes.
	Reads int `json:"reads"`
	// BloomFPR is the Bloom filter's target false-positive rate at its
	// capacity; the capacity is twice Rows (room to grow).
	BloomFPR float64 `json:"bloom_fpr"`
	// NullTTL is how long a "not found" is cached by the variants that
	// cache absences.
	NullTTL time.Duration `json:"null_ttl"`
}

// AvalancheParams size the avalanche scenario.
type AvalancheParams struct {
	Load
	// Keys is K, the number of keys cached at once.
	Keys int `json:"keys"`
	// Rate is the number of reads per second, in all (open loop).
	Rate int `json:"reads_per_sec"`
	// TTL is their common base lifetime.
	TTL time.Duration `json:"ttl"`
	// Jitter is the jitter variant's spread: lifetimes uniform in
	// [TTL·(1−Jitter), TTL·(1+Jitter)].
	Jitter float64 `json:"jitter"`
	// Tail is how long reads go on after the last possible expiry.
	Tail time.Duration `json:"tail"`
	// MaxConcurrentLoads is the per-process cap on DB loads of the
	// cache_down variant.
	MaxConcurrentLoads int `json:"max_concurrent_loads"`
	// OutageAt and OutageFor place the cache_down variant's Redis outage
	// after the start of its reads.
	OutageAt  time.Duration `json:"outage_at"`
	OutageFor time.Duration `json:"outage_for"`
}

// BreakdownParams size the breakdown scenario.
type BreakdownParams struct {
	Load
	// TTL is the hot key's lifetime (no jitter).
	TTL time.Duration `json:"ttl"`
	// Duration is how long every goroutine reads the hot key; it should
	// span a few TTLs.
	Duration time.Duration `json:"duration"`
	// LoadDelay is added to every DB query by a GORM callback during the
	// run, standing for a heavier query than a primary-key lookup (the
	// rebuild cost of a hot key).
	LoadDelay time.Duration `json:"load_delay"`
}

// SeqgenParams size the seqgen scenario.
type SeqgenParams struct {
	Load
	// Ops is the number of serials each variant issues.
	Ops int `json:"ops"`
	// Batch is NextN's n in the seqgen_nextn variant.
	Batch int `json:"batch"`
}

// Params size every scenario.
type Params struct {
	Hit         HitParams
	Penetration PenetrationParams
	Avalanche   AvalancheParams
	Breakdown   BreakdownParams
	Seqgen      SeqgenParams
	// LocalInvalidation sizes the near cache scenario.
	LocalInvalidation LocalInvalidationParams
	// Skew sizes the skewed fleet scenario (its zero value: the issue's
	// 4 × 16 callers over 100,000 rows).
	Skew SkewParams
}

// QuickParams finish every scenario in well under a minute on a small
// machine.
func QuickParams() Params {
	l := Load{Instances: 2, Goroutines: 8}
	return Params{
		Hit:         HitParams{Keys: 100, Ops: 6000, Rounds: 150, ValueSizes: []int{200, 4096}},
		Penetration: PenetrationParams{Load: l, Rows: 1000, AbsentIDs: 1000, Reads: 3000, BloomFPR: 0.01, NullTTL: time.Minute},
		Avalanche: AvalancheParams{Load: Load{Instances: 2, Goroutines: 128}, Keys: 300, Rate: 3000, TTL: 5 * time.Second, Jitter: 0.6,
			Tail: 500 * time.Millisecond, MaxConcurrentLoads: 4, OutageAt: time.Second, OutageFor: 2 * time.Second},
		Breakdown: BreakdownParams{Load: Load{Instances: 2, Goroutines: 16}, TTL: time.Second, Duration: 2500 * time.Millisecond, LoadDelay: 50 * time.Millisecond},
		Seqgen:    SeqgenParams{Load: l, Ops: 5000, Batch: 100},
		LocalInvalidation: LocalInvalidationParams{Load: Load{Instances: 3, Goroutines: 2}, Keys: 10, Writes: 100,
			WriteEvery: 10 * time.Millisecond, ReadEvery: DefaultReadEvery, LocalTTL: 2 * time.Second},
		Skew: SkewParams{Load: Load{Instances: 4, Goroutines: 8}, Rows: 20_000, Warmup: time.Second, Duration: 2 * time.Second},
	}
}

// EmbeddedParams are QuickParams scaled down for the embedded backend,
// where miniredis (with its Lua interpreter) and SQLite share the
// benchmark's own CPU: every scenario still shows its effect (the hot key
// of breakdown expires twice, avalanche's jittered expiries spread over
// 2.4 s), and all of them finish in under a minute on a 2-core machine
// (`make demo`).
func EmbeddedParams() Params {
	p := QuickParams()
	l := Load{Instances: 2, Goroutines: 4}
	p.Hit.Keys, p.Hit.Ops, p.Hit.Rounds = 50, 2000, 50
	p.Penetration.Load, p.Penetration.Rows, p.Penetration.AbsentIDs, p.Penetration.Reads = l, 300, 300, 900
	p.Avalanche.Keys, p.Avalanche.Rate, p.Avalanche.TTL = 100, 500, 2*time.Second
	p.Breakdown.Load, p.Breakdown.TTL, p.Breakdown.Duration = Load{Instances: 2, Goroutines: 8}, 600*time.Millisecond, 1400*time.Millisecond
	p.Seqgen.Load, p.Seqgen.Ops = l, 1000
	p.Skew.Load, p.Skew.Rows, p.Skew.Duration = l, 2000, time.Second // skipped on miniredis
	return p
}

// DefaultParams are large enough to show each effect clearly.
func DefaultParams() Params {
	l := Load{Instances: 4, Goroutines: 16}
	return Params{
		Hit:         HitParams{Keys: 1000, Ops: 20000, Rounds: 500, ValueSizes: []int{200, 4096}},
		Penetration: PenetrationParams{Load: l, Rows: 10000, AbsentIDs: 10000, Reads: 30000, BloomFPR: 0.01, NullTTL: time.Minute},
		Avalanche: AvalancheParams{Load: Load{Instances: 4, Goroutines: 128}, Keys: 1000, Rate: 3000, TTL: 10 * time.Second, Jitter: 0.6, Tail: time.Second,
			MaxConcurrentLoads: 4, OutageAt: 2 * time.Second, OutageFor: 3 * time.Second},
		Breakdown: BreakdownParams{Load: l, TTL: 2 * time.Second, Duration: 10500 * time.Millisecond, LoadDelay: 50 * time.Millisecond},
		Seqgen:    SeqgenParams{Load: l, Ops: 50000, Batch: 100},
		LocalInvalidation: LocalInvalidationParams{Load: Load{Instances: 4, Goroutines: 4}, Keys: 20, Writes: 500,
			WriteEvery: 10 * time.Millisecond, ReadEvery: DefaultReadEvery, LocalTTL: 5 * time.Second},
		Skew: SkewParams{Load: l, Rows: 100_000, Warmup: 2 * time.Second, Duration: 5 * time.Second},
	}
}

// paramsMap turns a params struct into a JSON-friendly map: json tag
// names, embedded structs flattened, durations as strings ("1.5s").
func paramsMap(v any) map[string]any {
	out := map[string]any{}
	flatten(reflect.ValueOf(v), out)
	return out
}

func flatten(v reflect.Value, out map[string]any) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && fv.Kind() == reflect.Struct {
			flatten(fv, out)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if d, ok := fv.Interface().(time.Duration); ok {
			out[name] = d.String()
			continue
		}
		out[name] = fv.Interface()
	}
}
