package benchmarks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
)

// Keyed is implemented by a Subject that can name the Redis key it caches
// id under, so that a program knowing nothing of the library can delete it.
type Keyed interface {
	CacheKey(id int64) string
}

// CacheKey is the Redis key of id's entry.
func (s *entitySubject) CacheKey(id int64) string {
	k, _ := s.ent.Key(strconv.FormatInt(id, 10))
	return k
}

// OutsideWriteVariants are asidekit's outside_write variants: the hit
// scenario's entity, remote only and with a near cache of Local.TTL
// p.LocalTTL invalidated by client tracking.
func OutsideWriteVariants(p LocalInvalidationParams) []Variant {
	pol := cacheaside.Policy{Strategy: cacheaside.Mutex, Jitter: 0.1}
	local := pol
	local.Local = &cacheaside.LocalPolicy{TTL: p.LocalTTL}
	return []Variant{
		entityVariant("asidekit", "cacheaside.Entity.Get, remote only", pol, cacheaside.LocalTracking),
		entityVariant("asidekit/local", fmt.Sprintf("with a near cache (Local.TTL %v), invalidated by client tracking", p.LocalTTL), local, cacheaside.LocalTracking),
	}
}

// RunOutsideWrite measures how long each variant serves a value after a
// program outside it changed it: p.Instances processes of the variant,
// p.Goroutines callers each, read p.Keys hot keys in turn while a writer
// changes a key's source of truth (the loader's answer) and deletes its
// Redis entry with a plain DEL on a client of its own, one key every
// p.WriteEvery. Every variant's Subject must implement Keyed. Rows report
// the invalidation_* delays (DEL returned → every process served the new
// version), stale_reads (reads begun after the DEL that answered an older
// version), stale_reads_after_window (of those, begun more than
// invalidation_max_ms + 10ms after it), writes_unseen (writes some process
// had not served when the run ended, p.Tail after the last write at the
// latest: their delay counts until then), requests and errors.
func RunOutsideWrite(ctx context.Context, env *Env, p LocalInvalidationParams, variants []Variant) (Result, error) {
	res := Result{Scenario: "outside_write", Backend: env.Backend, Params: paramsMap(p)}
	p.Load = p.Load.norm()
	p.Keys = max(p.Keys, 1)
	for _, v := range variants {
		row, err := outsideWriteVariant(ctx, env, p, v)
		if err != nil {
			return res, fmt.Errorf("outside_write: %s: %w", v.Name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d reader processes × %d goroutines over %d hot keys; %d outside writes (new source value, then a plain DEL of the library's key) one every %v; local TTL %v; "+
		"invalidation_*: DEL returned → every reader process served the new value", p.Instances, p.Goroutines, p.Keys, p.Writes, p.WriteEvery, p.LocalTTL))
	return res, nil
}

func outsideWriteVariant(ctx context.Context, env *Env, p LocalInvalidationParams, v Variant) (Row, error) {
	truth := make([]atomic.Int64, p.Keys)
	load := func(_ context.Context, id int64) (Value, error) {
		k := int(id - 1)
		if k < 0 || k >= p.Keys {
			return Value{}, ErrNotFound
		}
		return versioned(k, truth[k].Load()), nil
	}
	ns := env.Sub(strings.NewReplacer("/", "-", "+", "-").Replace(v.Name) + "-outside")
	subs, cleanup, err := env.instances(v, ns, "outside_write", p.Instances, time.Hour, load, nil)
	if err != nil {
		return Row{}, err
	}
	defer cleanup()
	keyed, ok := subs[0].(Keyed)
	if !ok {
		return Row{}, fmt.Errorf("its Subject (%T) does not name its keys (Keyed)", subs[0])
	}
	outside := env.NewClient()
	read := func(ctx context.Context, proc, k int) (Value, error) {
		return subs[proc].Get(ctx, int64(k+1))
	}
	d := p.drive(p.LocalTTL+time.Second, read, func(ctx context.Context, _, k int) (int64, error) {
		ver := truth[k].Add(1)
		return ver, outside.Del(ctx, keyed.CacheKey(int64(k+1))).Err()
	})
	st := d.run(ctx)
	row := Row{Variant: v.Name, Notes: v.Notes}
	st.setInvalidation(&row)
	row.Set(MetricStaleReads, float64(st.stale))
	row.Set(MetricWritesUnseen, float64(st.unseen))
	return row, ctx.Err()
}
