package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics of the hot_key scenario.
const (
	MetricOpsPerSec = "ops_per_sec"
	MetricP50us     = "p50_us"
	MetricP99us     = "p99_us"
)

// HotKeyParams size the hot_key scenario: Goroutines callers in each of
// Instances processes read a few warm keys for Duration.
type HotKeyParams struct {
	Load
	// Keys is the number of hot keys, read in turn. Default 8 when zero.
	// Ignored when KeySpace is set.
	Keys int `json:"keys"`
	// KeySpace, when positive, replaces the few hot keys by a skewed
	// keyspace: every caller reads keys drawn from Zipf(Zipf) over
	// KeySpace keys (the key of rank r with probability ∝ r^-Zipf), as a
	// fleet's traffic is spread. Every key is warmed in every process
	// first. Default 0: Keys keys read in turn.
	KeySpace int `json:"key_space,omitempty"`
	// Zipf is KeySpace's exponent. Default DefaultZipfS (1.1) when not
	// above 1.
	Zipf float64 `json:"zipf_s,omitempty"`
	// ValueSize is the approximate JSON size of a value, in bytes.
	// Default 200 when zero.
	ValueSize int `json:"value_bytes"`
	// Duration is how long each variant is read. Default 1s when zero.
	Duration time.Duration `json:"duration"`
}

func (p HotKeyParams) norm() HotKeyParams {
	p.Load = p.Load.norm()
	if p.Keys <= 0 {
		p.Keys = 8
	}
	if p.ValueSize <= 0 {
		p.ValueSize = 200
	}
	if p.Duration <= 0 {
		p.Duration = time.Second
	}
	if p.KeySpace > 0 && p.Zipf <= 1 {
		p.Zipf = DefaultZipfS
	}
	return p
}

// keys is how many keys the callers read, and their Zipf exponent (0: in
// turn).
func (p HotKeyParams) keys() (int, float64) {
	if p.KeySpace > 0 {
		return p.KeySpace, p.Zipf
	}
	return p.Keys, 0
}

// RunHotKey measures reads of a few hot keys under concurrency, one
// variant after the other: every caller reads p.Keys warm keys in turn for
// p.Duration. Values come from a synthetic loader (no database), so only
// hits are measured, remote or local. Rows report ops_per_sec (reads of all
// callers per second), ns_per_op (its inverse: wall time per read, all
// callers together; on a busy machine a caller waits for a processor far
// longer than a local hit takes, so the percentiles tell more), p50_us
// and p99_us (per read, from a log-linear histogram: about 3% resolution)
// and errors (a read that failed or returned another id).
func RunHotKey(ctx context.Context, env *Env, p HotKeyParams, variants []Variant) (Result, error) {
	p = p.norm()
	res := Result{Scenario: "hot_key", Backend: env.Backend, Params: paramsMap(p)}
	now := time.Now().UTC().Truncate(time.Microsecond)
	load := func(_ context.Context, id int64) (Value, error) { return sampleUser(id, p.ValueSize, now), nil }
	for _, v := range variants {
		row, err := hotKeyVariant(ctx, env, p, v, load)
		if err != nil {
			return res, fmt.Errorf("hot_key: %s: %w", v.Name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	keys := fmt.Sprintf("%d warm keys", p.Keys)
	if p.KeySpace > 0 {
		keys = fmt.Sprintf("keys drawn from Zipf(%g) over %d warm keys", p.Zipf, p.KeySpace)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d process(es) × %d goroutines read %s (%d B values) for %v per variant; "+
		"latencies include two clock reads per read", p.Instances, p.Goroutines, keys, p.ValueSize, p.Duration))
	return res, nil
}

func hotKeyVariant(ctx context.Context, env *Env, p HotKeyParams, v Variant, load Loader) (Row, error) {
	subs, cleanup, err := env.instances(v, env.Sub(v.Name+"-hotkey"), "hot_key", p.Instances, time.Hour, load, nil)
	if err != nil {
		return Row{}, err
	}
	defer cleanup()
	nkeys, zipf := p.keys()
	if err := warmHotKeys(ctx, subs, nkeys, p.Goroutines); err != nil {
		return Row{}, err
	}
	tr := env.trackTime("hot_key "+v.Name, p.Duration)
	defer tr()
	hists := make([]latHist, p.Instances*p.Goroutines)
	errs := make([]int64, len(hists))
	deadline := time.Now().Add(p.Duration)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range hists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := subs[i/p.Goroutines]
			keys := newZipfKeys(nkeys, zipf, uint64(i))
			for {
				id := int64(keys.next()) + 1
				b := time.Now()
				got, err := s.Get(ctx, id)
				e := time.Now()
				hists[i].add(e.Sub(b))
				if err != nil || got.ID != id {
					errs[i]++
				}
				if e.After(deadline) || ctx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var h latHist
	var ne int64
	for i := range hists {
		h.merge(&hists[i])
		ne += errs[i]
	}
	row := Row{Variant: v.Name, Notes: v.Notes}
	row.Set(MetricRequests, float64(h.n))
	row.Set(MetricErrors, float64(ne))
	row.Set(MetricOpsPerSec, float64(h.n)/elapsed.Seconds())
	row.Set(MetricNsPerOp, float64(elapsed)/float64(max(h.n, 1)))
	row.Set(MetricP50us, float64(h.quantile(0.5))/1e3)
	row.Set(MetricP99us, float64(h.quantile(0.99))/1e3)
	return row, ctx.Err()
}

// warmHotKeys reads keys 1…n twice in every process (the second read
// fills a local tier filled on remote hits only), with up to goroutines
// callers per process at a time.
func warmHotKeys(ctx context.Context, subs []Subject, n, goroutines int) error {
	for _, s := range subs {
		for range 2 {
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make([]error, max(1, min(goroutines, n)))
			for g := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for id := next.Add(1); id <= int64(n) && errs[g] == nil; id = next.Add(1) {
						if _, err := s.Get(ctx, id); err != nil {
							errs[g] = fmt.Errorf("warm-up: %w", err)
						}
					}
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return err
			}
		}
	}
	return nil
}

// latHist is a log-linear histogram of durations: 32 sub-buckets per
// power of two (about 3% wide), from 1ns to about 2^63 ns.
type latHist struct {
	counts [64 * latSub]int64
	n      int64
}

const latSubBits = 5
const latSub = 1 << latSubBits

func latBucket(ns uint64) int {
	if ns < latSub {
		return int(ns)
	}
	e := bits.Len64(ns) - latSubBits // ≥ 1
	return e*latSub + int(ns>>(e-1))&(latSub-1)
}

// latLow is the smallest duration of bucket b.
func latLow(b int) uint64 {
	if b < latSub {
		return uint64(b)
	}
	e := b / latSub
	return (latSub + uint64(b%latSub)) << (e - 1)
}

func (h *latHist) add(d time.Duration) {
	h.counts[latBucket(uint64(max(d, 0)))]++
	h.n++
}

func (h *latHist) merge(o *latHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile is the middle of the bucket holding quantile q.
func (h *latHist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.999999)
	rank = max(1, min(rank, h.n))
	var c int64
	for b, k := range h.counts {
		if c += k; c >= rank {
			lo, hi := latLow(b), latLow(b+1)
			return time.Duration((lo + hi) / 2)
		}
	}
	return 0
}
