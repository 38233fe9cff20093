package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
)

// Metrics of the local_invalidation scenario.
const (
	MetricInvalidationP50 = "invalidation_p50_ms"
	MetricInvalidationP99 = "invalidation_p99_ms"
	MetricInvalidationMax = "invalidation_max_ms"
	MetricStaleAfter      = "stale_reads_after_window"
)

// LocalInvalidationParams size the local_invalidation scenario.
type LocalInvalidationParams struct {
	// Instances reader processes with a near cache, Goroutines each.
	Load
	// Keys is the number of hot keys, read in turn and written in turn.
	Keys int `json:"keys"`
	// Writes is the number of writes per variant, one every WriteEvery.
	Writes     int           `json:"writes"`
	WriteEvery time.Duration `json:"write_every"`
	// ReadEvery paces each reader goroutine: it reads every key once, in
	// turn (from a key of its own, so that the goroutines of a process read
	// different keys at a time), then pauses ReadEvery. Each process thus
	// reads every key at least once per sweep and pause, and a measured
	// delay includes up to that long a wait for the next read: ReadEvery,
	// plus the timer's lateness (Go wakes an idle process at whole
	// milliseconds: a pause of 1ms or less lasts about 1.2ms, and since the
	// writer's ticker wakes on the same ticks, a write usually returns just
	// after the readers' sweep, and waits most of that for the next), plus
	// a sweep (microseconds of near cache hits, and a Redis round trip or
	// a load for each key that changed). Default (0) DefaultReadEvery,
	// 1ms. Readers that never pause (as this harness's did, yielding after
	// each read) keep every processor busy, and on a small machine Go's
	// scheduler then polls the network only now and then: the
	// invalidations and the re-reads' replies waited up to 10ms each,
	// which measured the harness, not the library.
	ReadEvery time.Duration `json:"read_every"`
	// LocalTTL is the near cache's Local.TTL: the bound on staleness when
	// a change is not seen at all.
	LocalTTL time.Duration `json:"local_ttl"`
	// Tail is the longest wait, after the last write, for every reader to
	// serve every key's last version (the run ends as soon as they all
	// have); a write still unserved then counts with its delay until then.
	// Default: max(200ms, 4×WriteEvery) in local_invalidation (LocalTTL +
	// 1s in its broadcast/plain_del, which waits for the local entries to
	// expire), LocalTTL + 1s in outside_write.
	Tail time.Duration `json:"tail,omitempty"`
	// KeySpace, when positive, spreads reads and writes over a skewed
	// keyspace (outside_write and library_delete only): every reader
	// sweep reads Keys keys drawn from Zipf(Zipf) over KeySpace keys,
	// and the writer writes keys drawn from the same distribution, so
	// that hot keys are written most. A process that does not read a
	// written key again before the run ends neither served nor missed
	// it: the write counts in writes_unread, not writes_unseen, and its
	// delay covers the processes that read it. Default 0: Keys keys,
	// read and written in turn.
	KeySpace int `json:"key_space,omitempty"`
	// Zipf is KeySpace's exponent. Default DefaultZipfS (1.1) when not
	// above 1.
	Zipf float64 `json:"zipf_s,omitempty"`
	// Window, when positive, is how long after a write returned a read
	// of its key may still answer the older version: a read begun later
	// that does counts in stale_reads_after_window. Default 0: the run's
	// own invalidation_max_ms + 10ms (outside_write and library_delete).
	Window time.Duration `json:"window,omitempty"`
}

// tailOr is p.Tail, or def when it is zero.
func (p LocalInvalidationParams) tailOr(def time.Duration) time.Duration {
	if p.Tail > 0 {
		return p.Tail
	}
	return def
}

// localVariant is one row of local_invalidation.
type localVariant struct {
	name, notes string
	mode        cacheaside.LocalInvalidation
	plain       bool // writes by UPDATE-then-DEL from outside asidekit
	repo        bool // reads and writes through repo, on the database
	kill        bool // the near cache connections are killed mid-run
}

func localVariants() []localVariant {
	return []localVariant{
		{name: "tracking/asidekit", notes: "client tracking; writes by Entity.Set (as repo after its commit)", mode: cacheaside.LocalTracking},
		{name: "tracking/repo", notes: "client tracking; readers and writer are repo.Repository over PostgreSQL (Update: UPDATE, then the cache write)", mode: cacheaside.LocalTracking, repo: true},
		{name: "tracking/plain_del", notes: "client tracking; writes by a plain DEL from outside asidekit", mode: cacheaside.LocalTracking, plain: true},
		{name: "tracking/plain_del/kill", notes: "the same, the near cache connections killed (CLIENT KILL) mid-run", mode: cacheaside.LocalTracking, plain: true, kill: true},
		{name: "broadcast/asidekit", notes: "asidekit's own pub/sub broadcast; writes by Entity.Set", mode: cacheaside.LocalBroadcast},
		{name: "broadcast/repo", notes: "broadcast; writes by repo.Repository.Update", mode: cacheaside.LocalBroadcast, repo: true},
		{name: "broadcast/plain_del", notes: "broadcast; a plain DEL is not announced: stale up to Local.TTL", mode: cacheaside.LocalBroadcast, plain: true},
	}
}

// RunLocalInvalidation measures how fast a write reaches the near caches of
// other processes: p.Instances readers read p.Keys hot keys in turn while
// a writer changes them one every p.WriteEvery, through asidekit or with a
// plain DEL from outside it (after changing the source of truth), per
// invalidation mechanism; one sub-run kills the near cache connections
// half way. For each write, the delay is from the write's return until
// every reader process has served the new version (its first read begun
// after the write to return it); stale_reads_after_window counts the reads
// that returned an older version although they began more than
// invalidation_max_ms + 10ms after the write (must be 0 where the
// mechanism sees the write). Needs client tracking: not on miniredis.
func RunLocalInvalidation(ctx context.Context, env *Env, p LocalInvalidationParams) (Result, error) {
	res := Result{Scenario: "local_invalidation", Backend: env.Backend, Params: paramsMap(p)}
	if env.EmbeddedRedis {
		res.Notes = append(res.Notes, "skipped: miniredis has no client tracking")
		return res, nil
	}
	p.Keys = max(p.Keys, 1)
	for _, v := range localVariants() {
		run := runLocalVariant
		if v.repo {
			run = runLocalRepo
		}
		row, err := run(ctx, env, p, v)
		if err != nil {
			return res, fmt.Errorf("local_invalidation: %s: %w", v.name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d reader processes × %d goroutines (each sweeping the keys, then pausing %v) over %d hot keys, %d writes one every %v, Local.TTL %v; "+
		"invalidation_*: write returned → every reader process served the new version", p.Instances, p.Goroutines, p.readEvery(), p.Keys, p.Writes, p.WriteEvery, p.LocalTTL))
	return res, nil
}

func runLocalVariant(ctx context.Context, env *Env, p LocalInvalidationParams, v localVariant) (Row, error) {
	st, err := driveLocalVariant(ctx, env, p, v)
	if err != nil {
		return Row{}, err
	}
	row := Row{Variant: v.name, Notes: v.notes}
	st.setInvalidation(&row)
	return row, nil
}

// driveLocalVariant runs variant v (not a repo one) and returns what it
// measured.
func driveLocalVariant(ctx context.Context, env *Env, p LocalInvalidationParams, v localVariant) (staleStats, error) {
	ns := env.Sub("local-" + strings.ReplaceAll(v.name, "/", "-"))
	var truth sync.Map // key index -> *atomic.Int64 version
	for k := 0; k < p.Keys; k++ {
		truth.Store(k, new(atomic.Int64))
	}
	verOf := func(k int) *atomic.Int64 { x, _ := truth.Load(k); return x.(*atomic.Int64) }
	load := func(_ context.Context, id string) (Value, error) {
		k, err := strconv.Atoi(id)
		if err != nil {
			return Value{}, err
		}
		return versioned(k, verOf(k).Load()), nil
	}
	pol := cacheaside.Policy{TTL: time.Hour, Strategy: cacheaside.SingleFlight, Local: &cacheaside.LocalPolicy{TTL: p.LocalTTL}}
	open := func() (*cacheaside.Cache, *cacheaside.Entity[Value], error) {
		var e *cacheaside.Entity[Value]
		c, err := openNear(ctx, env, ns, v.mode, func(c *cacheaside.Cache) (err error) {
			e, err = cacheaside.NewEntity[Value](c, "user", pol)
			return err
		})
		return c, e, err
	}
	wc, writer, err := open()
	if err != nil {
		return staleStats{}, err
	}
	defer wc.Close()
	readers := make([]*cacheaside.Entity[Value], p.Instances)
	for i := range readers {
		c, e, err := open()
		if err != nil {
			return staleStats{}, err
		}
		defer c.Close()
		readers[i] = e
	}

	read := func(ctx context.Context, proc, k int) (Value, error) {
		return readers[proc].Get(ctx, strconv.Itoa(k), load)
	}
	// One client for the plain DELs and the kill, as the other program
	// would have: a client per write leaked its pool (MinIdleConns each)
	// until the Env closed, and by the last plain_del variant of a default
	// run Redis refused connections (maxclients), so the DELs failed and
	// their writes were never served.
	var outside redis.UniversalClient
	if v.plain || v.kill {
		outside = env.NewClient()
	}
	// A plain DEL under broadcast is seen when the local entries expire:
	// the run waits out Local.TTL, or its end would cut those delays short
	// (a run of writes shorter than Local.TTL ended with every one unserved).
	tail := max(200*time.Millisecond, 4*p.WriteEvery)
	if v.plain && v.mode == cacheaside.LocalBroadcast {
		tail = p.LocalTTL + time.Second
	}
	d := p.drive(tail, read, func(ctx context.Context, w, k int) (int64, error) {
		if v.kill && w == p.Writes/2 {
			if err := killNearConns(ctx, outside, ns); err != nil {
				return 0, err
			}
		}
		ver := verOf(k).Add(1)
		id := strconv.Itoa(k)
		if v.plain {
			key, _ := writer.Key(id)
			return ver, outside.Del(ctx, key).Err()
		}
		return ver, writer.Set(ctx, id, versioned(k, ver))
	})
	return d.run(ctx), nil
}

// openNear returns a Cache of namespace ns on a client of its own, once
// the near cache of the entity made by entity may serve.
func openNear(ctx context.Context, env *Env, ns string, mode cacheaside.LocalInvalidation, entity func(*cacheaside.Cache) error) (*cacheaside.Cache, error) {
	c, err := cacheaside.New(env.NewClient(), &cacheaside.Options{Namespace: ns, LocalInvalidation: mode})
	if err != nil {
		return nil, err
	}
	err = entity(c)
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = c.WaitLocal(wctx)
		cancel()
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// versioned is key k's value at version ver (the version in Name).
func versioned(k int, ver int64) Value {
	return Value{ID: int64(k), Name: strconv.FormatInt(ver, 10)}
}

// killNearConns closes the near cache connections of namespace ns (CLIENT
// KILL by name) on every master.
func killNearConns(ctx context.Context, client redis.UniversalClient, ns string) error {
	kill := func(ctx context.Context, node redis.Cmdable) error {
		list, err := node.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		for line := range strings.Lines(list) {
			var id int64
			if !strings.Contains(line, " name="+ns+":near ") {
				continue
			}
			if _, err := fmt.Sscanf(line, "id=%d", &id); err != nil {
				return err
			}
			if err := node.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
		}
		return nil
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return kill(ctx, node) })
	}
	return kill(ctx, client)
}
