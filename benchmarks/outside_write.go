package benchmarks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

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

// Encoder is implemented by a Subject that can say which bytes a program
// outside the library would SET under its key for v: the library's own
// encoding, obtained from the library's exported functions, where it
// exports one.
type Encoder interface {
	OutsideValue(v Value) ([]byte, error)
}

// OutsideValue is v in asidekit's default codec (cacheaside.JSON) without
// the entry header asidekit puts in front of it: asidekit exports no entry
// encoder, so an outside program can only write the plain value. asidekit
// reads it as a foreign entry (EventDecodeError): it deletes it and loads
// the value from the source of truth.
func (s *entitySubject) OutsideValue(v Value) ([]byte, error) {
	return cacheaside.JSON{}.Marshal(v)
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
	return runOutside(ctx, env, p, variants, outsideDel)
}

// RunOutsideSet is RunOutsideWrite with the value changed by a plain SET
// in place of the DEL: the writer changes the key's source of truth, then
// SETs the new value into the library's own key, in the library's own
// encoding (the Subject's Encoder), keeping the key's TTL (KEEPTTL; a key
// absent at that moment is created without one, as any plain SET would). Every
// variant's Subject must implement Keyed and Encoder. The invalidation_*
// delays run from the SET's return.
func RunOutsideSet(ctx context.Context, env *Env, p LocalInvalidationParams, variants []Variant) (Result, error) {
	return runOutside(ctx, env, p, variants, outsideSet)
}

// outsideHow is how the outside writer changes a library's key.
type outsideHow int

const (
	outsideDel outsideHow = iota // a plain DEL (outside_write)
	outsideSet                   // a plain SET of the new value (outside_set)
)

func (h outsideHow) scenario() string {
	if h == outsideSet {
		return "outside_set"
	}
	return "outside_write"
}

func runOutside(ctx context.Context, env *Env, p LocalInvalidationParams, variants []Variant, how outsideHow) (Result, error) {
	res := Result{Scenario: how.scenario(), Backend: env.Backend, Params: paramsMap(p)}
	p.Load = p.Load.norm()
	p.Keys = max(p.Keys, 1)
	for _, v := range variants {
		row, err := outsideWriteVariant(ctx, env, p, v, how)
		if err != nil {
			return res, fmt.Errorf("%s: %s: %w", res.Scenario, v.Name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	change, cmd := "then a plain DEL of the library's key", "DEL"
	if how == outsideSet {
		change, cmd = "then a plain SET KEEPTTL of the new value, in the library's encoding, into the library's key", "SET"
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d reader processes × %d goroutines over %d hot keys; %d outside writes (new source value, %s) one every %v; local TTL %v; "+
		"invalidation_*: %s returned → every reader process served the new value", p.Instances, p.Goroutines, p.Keys, p.Writes, change, p.WriteEvery, p.LocalTTL, cmd))
	return res, nil
}

func outsideWriteVariant(ctx context.Context, env *Env, p LocalInvalidationParams, v Variant, how outsideHow) (Row, error) {
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
	enc, ok := subs[0].(Encoder)
	if how == outsideSet && !ok {
		return Row{}, fmt.Errorf("its Subject (%T) does not encode values (Encoder)", subs[0])
	}
	outside := env.NewClient()
	read := func(ctx context.Context, proc, k int) (Value, error) {
		return subs[proc].Get(ctx, int64(k+1))
	}
	d := p.drive(p.LocalTTL+time.Second, read, func(ctx context.Context, _, k int) (int64, error) {
		ver := truth[k].Add(1)
		key := keyed.CacheKey(int64(k + 1))
		if how == outsideDel {
			return ver, outside.Del(ctx, key).Err()
		}
		b, err := enc.OutsideValue(versioned(k, ver))
		if err != nil {
			return ver, err
		}
		return ver, outside.Set(ctx, key, b, redis.KeepTTL).Err()
	})
	st := d.run(ctx)
	row := Row{Variant: v.Name, Notes: v.Notes}
	st.setInvalidation(&row)
	row.Set(MetricStaleReads, float64(st.stale))
	row.Set(MetricWritesUnseen, float64(st.unseen))
	return row, ctx.Err()
}
