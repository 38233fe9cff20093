package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// ErrOverloaded is what a Subject returns, wrapped or not, when it refused
// a load to protect the database; the harness counts such errors apart
// (as "overloaded"). cacheaside.ErrOverloaded is recognised too.
var ErrOverloaded = errors.New("benchmarks: overloaded")

func isOverloaded(err error) bool {
	return errors.Is(err, ErrOverloaded) || errors.Is(err, cacheaside.ErrOverloaded)
}

// Warmer is implemented by a Subject that can cache many ids at once (one
// batch read); the avalanche scenario uses it to cache its keys at the same
// moment. Without it the harness calls Get for each id concurrently.
type Warmer interface {
	Warm(ctx context.Context, ids []int64) error
}

// repoSubject reads users through a repo.Repository, as a service does.
type repoSubject struct {
	cache *cacheaside.Cache
	users *repo.Repository[sample.User, int64]
}

func (s *repoSubject) Get(ctx context.Context, id int64) (Value, error) {
	v, err := s.users.Get(ctx, id)
	if errors.Is(err, repo.ErrNotFound) {
		return v, ErrNotFound
	}
	return v, err
}

// Warm caches ids with GetMany: one MGET and one SELECT … IN per batch.
func (s *repoSubject) Warm(ctx context.Context, ids []int64) error {
	_, err := s.users.GetMany(ctx, ids)
	return err
}

func (s *repoSubject) Close() error { return s.cache.Close() }

// repoVariant is an asidekit variant: a repo.Repository[sample.User, int64]
// over a cacheaside.Cache of the instance's client, with policy pol. With
// filter set, the repository keeps a Bloom filter over the primary keys,
// which instance 0 warms from the table.
func repoVariant(name, notes string, pol cacheaside.Policy, filter *bloom.Options) Variant {
	return Variant{
		Name:    name,
		Notes:   notes,
		LoadCap: max(pol.MaxConcurrentLoads, 0),
		New: func(s Setup) (Subject, error) {
			cache, err := cacheaside.New(s.Client, &cacheaside.Options{Namespace: s.Namespace})
			if err != nil {
				return nil, err
			}
			p := pol
			if p.TTL == 0 {
				p.TTL = s.TTL
			}
			opts := repo.Options{Policy: p, Name: "user"}
			if filter != nil {
				f := *filter
				f.Namespace = s.Namespace
				opts.Filter = &f
				opts.FilterClient = s.Client
			}
			users, err := repo.New[sample.User, int64](s.Env.DB, cache, &opts)
			if err != nil {
				_ = cache.Close()
				return nil, err
			}
			if filter != nil && s.Instance == 0 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				if err := users.WarmFilter(ctx); err != nil {
					_ = cache.Close()
					return nil, fmt.Errorf("warm filter: %w", err)
				}
			}
			return &repoSubject{cache: cache, users: users}, nil
		},
	}
}

// entitySubject reads through a cacheaside.Entity directly, with the
// Setup's loader: the hit scenario's asidekit variant.
type entitySubject struct {
	cache *cacheaside.Cache
	ent   *cacheaside.Entity[Value]
	load  func(ctx context.Context, id string) (Value, error)
}

func (s *entitySubject) Get(ctx context.Context, id int64) (Value, error) {
	v, err := s.ent.Get(ctx, strconv.FormatInt(id, 10), s.load)
	if errors.Is(err, cacheaside.ErrNotFound) {
		return v, ErrNotFound
	}
	return v, err
}

func (s *entitySubject) Close() error { return s.cache.Close() }

// entityVariant is an asidekit variant over a cacheaside.Entity. With a
// near cache (pol.Local), invalidated as mode says (by LocalBroadcast on
// miniredis, which has no client tracking), New returns once the near
// cache may serve.
func entityVariant(name, notes string, pol cacheaside.Policy, mode cacheaside.LocalInvalidation) Variant {
	return Variant{
		Name:  name,
		Notes: notes,
		New: func(s Setup) (Subject, error) {
			if s.Env.EmbeddedRedis {
				mode = cacheaside.LocalBroadcast
			}
			cache, err := cacheaside.New(s.Client, &cacheaside.Options{Namespace: s.Namespace, LocalInvalidation: mode})
			if err != nil {
				return nil, err
			}
			p := pol
			if p.TTL == 0 {
				p.TTL = s.TTL
			}
			ent, err := cacheaside.NewEntity[Value](cache, "user", p)
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err = cache.WaitLocal(ctx)
				cancel()
			}
			if err != nil {
				_ = cache.Close()
				return nil, err
			}
			load := s.Load
			return &entitySubject{cache: cache, ent: ent, load: func(ctx context.Context, id string) (Value, error) {
				n, err := strconv.ParseInt(id, 10, 64)
				if err != nil {
					return Value{}, err
				}
				v, err := load(ctx, n)
				if errors.Is(err, ErrNotFound) {
					return v, cacheaside.ErrNotFound
				}
				return v, err
			}}, nil
		},
	}
}

// HitVariants are asidekit's hit-path variants: a cacheaside entity with
// the recommended policy (Mutex, 10% jitter), without and with a near
// cache. The bare GET + decode
// baseline is added by RunHit itself.
func HitVariants() []Variant {
	return []Variant{
		entityVariant("asidekit", "cacheaside.Entity.Get on a hit (Mutex policy)",
			cacheaside.Policy{Strategy: cacheaside.Mutex, Jitter: 0.1}, cacheaside.LocalTracking),
		entityVariant("asidekit/local", "the same with a near cache (Policy.Local, invalidated by client tracking)",
			cacheaside.Policy{Strategy: cacheaside.Mutex, Jitter: 0.1, Local: &cacheaside.LocalPolicy{}}, cacheaside.LocalTracking),
	}
}

// PenetrationVariants are asidekit's penetration guards, through repo:
// none is the unprotected baseline (strategy None, nothing cached for an
// absent id); the guarded variants use the recommended Mutex strategy, so
// that concurrent first reads of one absent id share one load.
func PenetrationVariants(p PenetrationParams) []Variant {
	noNull := cacheaside.Policy{TTL: 10 * time.Minute, Strategy: cacheaside.None, NullTTL: -1}
	nullPol := cacheaside.Policy{TTL: 10 * time.Minute, Strategy: cacheaside.Mutex, NullTTL: p.NullTTL}
	bloomPol := nullPol
	bloomPol.NullTTL = -1
	bf := &bloom.Options{Capacity: int64(max(2*p.Rows, 1)), FalsePositiveRate: p.BloomFPR}
	return []Variant{
		repoVariant("none", "no guard: every read of an absent id queries the DB", noNull, nil),
		repoVariant("null_cache", fmt.Sprintf("absent ids cached as \"not found\" for %v", p.NullTTL), nullPol, nil),
		repoVariant("bloom", fmt.Sprintf("Bloom filter over existing ids (p=%g at capacity %d), no null cache", p.BloomFPR, bf.Capacity), bloomPol, bf),
		repoVariant("bloom_null", "Bloom filter and null cache", nullPol, bf),
	}
}

// AvalancheVariants are asidekit's avalanche variants, through repo:
// no_jitter (every key expires after exactly TTL) and jitter (TTL spread
// by ±p.Jitter) with strategy SingleFlight (concurrent misses of a key in
// one process share a load), so that jitter is the only difference between
// them; and cache_down (jitter, the Mutex strategy, Redis cut off
// mid-run and DB loads capped at p.MaxConcurrentLoads per process).
func AvalancheVariants(p AvalancheParams) []Variant {
	noJitter := cacheaside.Policy{Strategy: cacheaside.SingleFlight, Jitter: -1}
	jitter := cacheaside.Policy{Strategy: cacheaside.SingleFlight, Jitter: p.Jitter}
	down := cacheaside.Policy{Strategy: cacheaside.Mutex, Jitter: p.Jitter}
	down.MaxConcurrentLoads = max(p.MaxConcurrentLoads, 1)
	cd := repoVariant("cache_down", fmt.Sprintf("Redis cut off for %v; DB loads capped at %d per process (MaxConcurrentLoads)", p.OutageFor, down.MaxConcurrentLoads), down, nil)
	cd.Outage = true
	return []Variant{
		repoVariant("no_jitter", "every key expires exactly TTL after it was cached", noJitter, nil),
		repoVariant("jitter", fmt.Sprintf("TTL uniform in [%.1f·TTL, %.1f·TTL]", 1-p.Jitter, 1+p.Jitter), jitter, nil),
		cd,
	}
}

// BreakdownVariants are asidekit's breakdown strategies, through repo,
// without jitter.
func BreakdownVariants(BreakdownParams) []Variant {
	v := func(name, notes string, s cacheaside.Strategy) Variant {
		return repoVariant(name, notes, cacheaside.Policy{Strategy: s, Jitter: -1, NullTTL: -1}, nil)
	}
	return []Variant{
		v("none", "every miss loads", cacheaside.None),
		v("singleflight", "one load per process (x/sync/singleflight style)", cacheaside.SingleFlight),
		v("mutex", "one load across processes: Redis lease + pub/sub wake-up", cacheaside.Mutex),
		v("async_refresh", "logical expiry: stale value served while one process refreshes", cacheaside.AsyncRefresh),
		v("early_refresh", "XFetch: probabilistic refresh before expiry, under the lease", cacheaside.EarlyRefresh),
	}
}
