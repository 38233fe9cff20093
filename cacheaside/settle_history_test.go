package cacheaside

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

const (
	restartProcs   = 4
	restartReaders = 3 // per process, besides one writer
	restartIDs     = 8
	restartCycles  = 4
	// restartAfter is how long each cycle runs once Redis is back: the
	// stale reads this test looks for come within a second of it.
	restartAfter = time.Second
)

// No read returns a version older than a write that returned before the
// read began (its invalidation done, or queued after a failure, as a
// repository's write returns nil), while the processes' private Redis is
// killed (SIGKILL) and started again empty, several times: every process
// sees the outage, writers' invalidations wait behind their breakers, and
// readers' loads that read a row before such a write must not be cached
// (the settle window). Run with testswitch.SettleOff set, it finds
// hundreds of stale reads.
func TestSettle_restartHistory(t *testing.T) {
	t.Parallel()
	for _, s := range []Strategy{Mutex, SingleFlight} {
		t.Run(s.String(), func(t *testing.T) {
			bad, st := runRestartHistory(t, s)
			t.Logf("%v: %d reads, %d writes, %d deferred invalidations, %d settled, %d data losses found; %d stale reads",
				s, st.reads, st.writes, st.deferred, st.settled, st.losses, len(bad))
			if len(bad) > 0 {
				t.Fatalf("%d stale reads, first: %s", len(bad), bad[0])
			}
		})
	}
}

type restartStats struct {
	reads, writes             int
	deferred, settled, losses uint64
}

func runRestartHistory(t *testing.T, s Strategy) ([]string, restartStats) {
	srv := testcontainers.NewRedisServer(t)
	p := Policy{Strategy: s, TTL: time.Minute, LockTTL: 300 * time.Millisecond, WaitTimeout: time.Second}
	ents := make([]*Entity[user], restartProcs)
	for i := range ents {
		client := redis.NewClient(&redis.Options{
			Addr: srv.Addr, DialTimeout: 200 * time.Millisecond,
			ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
		})
		t.Cleanup(func() { _ = client.Close() })
		c := newCache(t, client, "restart", &Options{BreakerThreshold: 3, BreakerCooldown: 100 * time.Millisecond})
		ents[i] = newEntity[user](t, c, "row", p)
	}
	db := &historyDB{vers: make([]atomic.Int64, restartIDs)}
	var h history
	w := newCrew()
	ctx := context.Background()
	mix := readMix{draw: func() int { return rand.IntN(restartIDs) }, many: 4, ids: 2}
	for _, e := range ents {
		for range restartReaders {
			w.loop(func() bool { historyRead(ctx, e, db, &h, w.report, mix); return true })
		}
		w.loop(func() bool { // a writer: the source of truth, then Invalidate
			n := rand.IntN(restartIDs)
			ver := db.vers[n].Add(1)
			err := e.Invalidate(ctx, strconv.Itoa(n))
			if err != nil && !errors.Is(err, ErrInvalidationPending) {
				w.report(err)
				return false
			}
			// Returned: done, or queued for the retrier.
			h.add(&h.writes, historyOp{id: n, at: time.Now(), ver: int(ver)})
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // pacing, not synchronisation
			return true
		})
	}
	failures := func(e *Entity[user]) uint64 { st := e.Stats(); return st.CacheErrors + st.Bypassed }
	hits := func() uint64 {
		var n uint64
		for _, e := range ents {
			n += e.Stats().Hits
		}
		return n
	}
	waitFor(t, 30*time.Second, func() bool { return hits() > 200 })
	for range restartCycles {
		before := make([]uint64, len(ents))
		for i, e := range ents {
			before[i] = failures(e)
		}
		srv.Kill()
		// Every process sees the outage.
		waitFor(t, 30*time.Second, func() bool {
			for i, e := range ents {
				if failures(e) < before[i]+3 {
					return false
				}
			}
			return true
		})
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(restartAfter) // the run itself, not a synchronisation
	}
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	st := restartStats{reads: len(h.reads), writes: len(h.writes)}
	for _, e := range ents {
		es := e.Stats()
		st.deferred += es.InvalidationsDeferred
		st.settled += es.Settled
		st.losses += e.c.DataLosses()
	}
	return h.stale(restartIDs), st
}
