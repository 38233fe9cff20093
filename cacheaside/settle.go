package cacheaside

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/internal/token"
	"github.com/asidekit/asidekit/internal/topology"
)

// The settle window. A write whose invalidation failed (Redis down, or
// this process's breaker still open after Redis came back) returns, and
// the invalidation waits in the writer's retrier. Until it is applied, a
// load in another process that read the row before the write's COMMIT
// can store the old row: its version check passes, as nothing replaced
// the version yet (after Redis restarted empty there was no version to
// replace at all). Only the retry ends that window, so no process that
// may hold such a load stores anything until every writer's pending
// invalidations could have been retried:
//
//   - A process that saw Redis fail (any failed call) settles: for
//     SettleWindow after its last failure, and again for SettleWindow
//     from the first call that Redis answered after failures, its misses
//     load from the database directly, uncached (as when Redis is down),
//     its refreshes and write-through stores (SetIfVersion) are skipped,
//     and a load that was under way stores nothing (its lease is given
//     up). Hits are served: an entry in Redis was stored either before
//     the failure (what a partition leaves; see below) or by a fill that
//     passed the same rule.
//   - A process that saw nothing (Redis restarted between two of its
//     calls) learns it from the epoch marker: on a single Redis node
//     (*redis.Client) the Cache keeps a marker key (namespace + ":epoch",
//     no TTL, a random value) and every fill checks, in the same script,
//     that the marker still holds the value this Cache knows. A Redis
//     that lost its data (restarted empty, flushed) has no marker, so the
//     fill is refused and the Cache settles from then on, and writes a new
//     marker (which the other Caches, knowing the old one, detect in turn).
//     It costs nothing on the hit path and one GET inside the fill script.
//
// Why SettleWindow bounds the retries: once Redis answers again, a
// writer's breaker lets a call through within BreakerCooldown (a Kit's
// node guard within its own cooldown and call timeout, about 0.75 s), its
// retrier tries at least every retryMax while it holds invalidations (at
// once when a call of the process succeeds), and a try takes at most
// retryTimeout. So the default, BreakerCooldown + retryMax +
// retryTimeout + 1 s, covers a writer with the same options. It is
// measured from the reader's own observation that Redis answers, which is
// never before Redis answers.
//
// What it cannot cover: an entry that Redis kept through the failure and
// that a write made meanwhile must remove, above all when the writer
// alone lost Redis (a partition of one process) while the others kept
// reading the old entry: hits serve it until the writer's retry. That
// window lasts as long as the writer cannot reach Redis, plus its retry
// (when every process lost Redis and it kept its data, the retry lands
// within the settle window, but hits are served meanwhile: bypassing them
// too would send every read to the database for the whole window). The
// writes concerned are counted (Stats.InvalidationsDeferred), and
// repo/cdc (its recovery gate holds every read until the writes made
// during the outage are applied) or repo.Options.AfterCommitErrors (the
// write reports it) close it. A Cache with a recovery gate does not
// settle: the gate covers the same writes. On a Redis Cluster there is no
// marker (a script reaches one hash slot); there only the processes that
// saw the node fail settle. And a Cache that learns the marker only after
// Redis lost its data (made while the other processes' retries are
// pending) cannot tell; it learns it in the background when it is made.

// Extra time of the default settle window beyond BreakerCooldown: the
// retrier's longest pause (retryMax), one try (retryTimeout), and a Kit's
// node guard reopening (its cooldown and probe timeout, rounded up).
const settleExtra = retryMax + retryTimeout + time.Second

// settle is a Cache's settle window and epoch marker.
type settle struct {
	c      *Cache
	window time.Duration // <= 0: off
	start  time.Time     // monotonic origin of until
	until  atomic.Int64  // ns since start until which the Cache settles; 0 = never began

	marker string                 // the epoch marker's key, "" on a Cluster or with the window off
	epoch  atomic.Pointer[string] // the marker's value this Cache knows; nil until learnt
	arg    atomic.Pointer[any]    // *epoch as a script argument, boxed once
	learn  sync.Mutex             // one learner at a time
	lost   atomic.Uint64          // times the marker was found changed or missing

	// learnt is closed when the learning that New starts ended (nil when
	// none started), for tests that count a client's commands.
	learnt chan struct{}
}

// init sets the window (already defaulted) and the marker for c's client.
func (s *settle) init(c *Cache, window time.Duration) {
	s.c, s.window, s.start = c, window, time.Now()
	if c.topo.Kind() == topology.Standalone && window > 0 {
		s.marker = c.ns + ":epoch"
	}
}

// active reports whether the Cache settles now: its fills are not
// stored. One atomic load while no window ever began. A Cache with a
// recovery gate never settles: the gate (repo/cdc's catch-up) holds its
// reads until the writes made during the outage are applied, and the
// invalidator applies those made since.
func (s *settle) active() bool {
	u := s.until.Load()
	return u != 0 && int64(time.Since(s.start)) < u && s.c.rec.ngates.Load() == 0 && !testswitch.SettleOff.Load()
}

// extend makes the Cache settle for the window from now.
func (s *settle) extend() {
	if s.window <= 0 {
		return
	}
	end := int64(time.Since(s.start) + s.window)
	for {
		u := s.until.Load()
		if u >= end || s.until.CompareAndSwap(u, end) {
			return
		}
	}
}

// markerArgs returns the marker key and the value this Cache knows (a
// string), for a fill to check; "", nil for no check (no marker, or Redis
// did not answer the learning call: then the Cache settles anyway).
func (s *settle) markerArgs(ctx context.Context) (key string, epoch any) {
	if s.marker == "" || testswitch.SettleOff.Load() {
		return "", nil
	}
	if p := s.arg.Load(); p != nil {
		return s.marker, *p
	}
	if _, ok := s.relearn(ctx, nil); ok {
		if p := s.arg.Load(); p != nil {
			return s.marker, *p
		}
	}
	return "", nil
}

// learnAsync learns the marker's value in the background, so that a
// Cache that only ever hits (a process started on a warm cache) knows it
// before its first fill: a Cache that learns it only after Redis lost its
// data cannot tell.
func (s *settle) learnAsync() {
	if s.marker == "" {
		return
	}
	s.learnt = make(chan struct{})
	if !s.c.goBackground(func() {
		defer close(s.learnt)
		ctx, cancel := context.WithTimeout(s.c.base, s.c.writeTimeout)
		defer cancel()
		s.markerArgs(ctx)
	}) {
		close(s.learnt)
	}
}

// recovered is called when Redis answers again after failures: it reads
// the marker in the background, so that a Redis that came back empty is
// found (and a new marker written) now, while the Cache settles anyway,
// not by the first fill after the window, which would start another.
func (s *settle) recovered() {
	s.extend()
	if s.marker == "" {
		return
	}
	old := s.epoch.Load()
	if old == nil {
		return // not learnt yet: the first fill learns it
	}
	s.c.goBackground(func() {
		ctx, cancel := context.WithTimeout(s.c.base, s.c.writeTimeout)
		defer cancel()
		if ep, ok := s.relearn(ctx, old); ok && ep != *old {
			s.lost.Add(1)
			s.extend()
		}
	})
}

// relearn reads the marker, writing a new one when it is missing, and
// keeps its value. old is the value a fill found outdated (nil when none
// was known): a concurrent learner that replaced it already is trusted.
func (s *settle) relearn(ctx context.Context, old *string) (string, bool) {
	s.learn.Lock()
	defer s.learn.Unlock()
	if p := s.epoch.Load(); p != nil && p != old {
		return *p, true
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.writeTimeout)
	defer cancel()
	var get *redis.StringCmd
	_, err := s.c.client.Pipelined(wctx, func(p redis.Pipeliner) error {
		p.SetNX(wctx, s.marker, token.New(), 0)
		get = p.Get(wctx, s.marker)
		return nil
	})
	if failed, _ := s.c.redisErr(wctx, err); failed || err != nil {
		return "", false
	}
	ep := get.Val()
	var arg any = ep
	s.arg.Store(&arg)
	s.epoch.Store(&ep)
	return ep, true
}

// changed handles a fill refused because the marker no longer holds the
// value the Cache knew (epoch): Redis lost its data, or another Cache
// found that out first. The Cache settles and learns the new value.
func (s *settle) changed(ctx context.Context, epoch string) {
	s.lost.Add(1)
	s.extend()
	p := s.epoch.Load()
	if p == nil || *p != epoch {
		return // relearnt already
	}
	s.relearn(ctx, p)
}

// Settling reports whether the Cache is in its settle window (see
// Options.SettleWindow): its misses load from the database uncached and
// no load stores its result, until every writer's invalidation that
// failed with Redis could have been retried.
func (c *Cache) Settling() bool { return c.settle.active() }

// DataLosses returns how many times a fill found that Redis had lost the
// Cache's epoch marker (restarted empty, flushed) or that another Cache
// had found it so and written a new one; each started a settle window.
func (c *Cache) DataLosses() uint64 { return c.settle.lost.Load() }
