package benchmarks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// BareVariant is the hit scenario's baseline: a hand-written cache-aside
// read, one GET and a json.Unmarshal, with no header, no strategy and no
// protection. RunHit always runs it first and divides by its ns/op.
func BareVariant() Variant {
	return Variant{
		Name:  "bare",
		Notes: "GET + json.Unmarshal (hand-written cache-aside)",
		New: func(s Setup) (Subject, error) {
			return &bareSubject{c: s.Client, prefix: s.Namespace + ":bare:", ttl: s.TTL, load: s.Load}, nil
		},
	}
}

type bareSubject struct {
	c      redis.UniversalClient
	prefix string
	ttl    time.Duration
	load   Loader
}

func (s *bareSubject) Get(ctx context.Context, id int64) (Value, error) {
	key := s.prefix + strconv.FormatInt(id, 10)
	var v Value
	b, err := s.c.Get(ctx, key).Bytes()
	if err == nil {
		err = json.Unmarshal(b, &v)
		return v, err
	}
	if !errors.Is(err, redis.Nil) {
		return v, err
	}
	if v, err = s.load(ctx, id); err != nil {
		return v, err
	}
	if b, err = json.Marshal(v); err != nil {
		return v, err
	}
	return v, s.c.Set(ctx, key, b, s.ttl).Err()
}

// RunHit measures the hit path: for each value size, one goroutine reads
// p.Keys warm keys in turn through BareVariant and through each variant.
// The reads are split into batches of p.Ops/p.Rounds; each batch runs
// every variant back to back (in rotating order), so that the machine's
// load at that moment weighs on all of them alike. Values come from a
// synthetic loader (no database): only hits are measured. Rows report
// ns_per_op (the median batch), allocs_per_op (process-wide mallocs per
// read, from runtime.MemStats) and ratio (the median over batches of the
// variant's time over bare's in the same batch).
func RunHit(ctx context.Context, env *Env, p HitParams, variants []Variant) (Result, error) {
	if p.Rounds <= 0 {
		p.Rounds = 5
	}
	if len(p.ValueSizes) == 0 {
		p.ValueSizes = []int{200, 4096}
	}
	p.Keys = max(p.Keys, 1)
	perRound := max(p.Ops/p.Rounds, 1)
	res := Result{Scenario: "hit", Backend: env.Backend, Params: paramsMap(p)}
	all := append([]Variant{BareVariant()}, variants...)
	tr := env.track("hit", int64(len(p.ValueSizes)*len(all)*perRound*p.Rounds))
	defer tr.Done()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, size := range p.ValueSizes {
		load := func(_ context.Context, id int64) (Value, error) { return sampleUser(id, size, now), nil }
		sample, _ := json.Marshal(sampleUser(int64(p.Keys), size, now))
		subs := make([]Subject, len(all))
		for i, v := range all {
			s, cleanup, err := env.instances(v, env.Sub(fmt.Sprintf("%s-%d", v.Name, size)), "hit", 1, time.Hour, load, nil)
			if err != nil {
				return res, err
			}
			defer cleanup()
			subs[i] = s[0]
			for id := int64(1); id <= int64(p.Keys); id++ {
				got, err := s[0].Get(ctx, id)
				if err == nil && got.ID != id {
					err = fmt.Errorf("read id %d, got the value of id %d", id, got.ID)
				}
				if err != nil {
					return res, fmt.Errorf("hit: %s: warm-up: %w", v.Name, err)
				}
			}
		}
		batches := make([][]float64, len(all)) // ns/op of each batch
		ratios := make([][]float64, len(all))  // over bare's, same batch
		allocs := make([]float64, len(all))
		errs := make([]int64, len(all))
		for r := 0; r < p.Rounds; r++ {
			ns := make([]float64, len(all))
			for k := range all {
				i := (k + r) % len(all) // rotate who goes first
				var al float64
				var ne int64
				ns[i], al, ne = hitRound(ctx, subs[i], p.Keys, perRound)
				batches[i] = append(batches[i], ns[i])
				allocs[i] += al / float64(p.Rounds)
				errs[i] += ne
				tr.Add(int64(perRound))
			}
			for i := range all {
				ratios[i] = append(ratios[i], ns[i]/ns[0])
			}
			if err := ctx.Err(); err != nil {
				return res, err
			}
		}
		for i, v := range all {
			row := Row{Variant: fmt.Sprintf("%s/%s", v.Name, sizeLabel(size)), Notes: v.Notes}
			row.Set(MetricValueBytes, float64(len(sample)))
			row.Set(MetricRequests, float64(perRound*p.Rounds))
			row.Set(MetricErrors, float64(errs[i]))
			row.Set(MetricNsPerOp, median(batches[i]))
			row.Set(MetricAllocsPerOp, allocs[i])
			row.Set(MetricRatio, median(ratios[i]))
			res.Rows = append(res.Rows, row)
		}
	}
	res.Notes = append(res.Notes, fmt.Sprintf("one goroutine, warm keys only, %d batches of %d reads per variant; "+
		"ns_per_op is the median batch, ratio the median of per-batch ratios to bare; allocs_per_op counts the whole process's mallocs",
		p.Rounds, perRound))
	return res, nil
}

// hitRound reads n ids in turn and returns ns/op, allocs/op and errors.
func hitRound(ctx context.Context, s Subject, keys, n int) (nsPerOp, allocsPerOp float64, errs int64) {
	// Start every batch from a collected heap, so that one variant's
	// garbage is not collected during another's batch.
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := 0; i < n; i++ {
		id := int64(i%keys) + 1
		if v, err := s.Get(ctx, id); err != nil || v.ID != id {
			errs++
		}
	}
	el := time.Since(start)
	runtime.ReadMemStats(&after)
	return float64(el.Nanoseconds()) / float64(n), float64(after.Mallocs-before.Mallocs) / float64(n), errs
}

// median returns the median of xs (0 if empty); xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sizeLabel(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%dKB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}
