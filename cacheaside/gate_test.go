package cacheaside

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// An id whose invalidation is pending is loaded even when the near cache
// holds it (gate.go, step 2 before step 3), by Get as by GetMany: the
// entry may have been filled from Redis by a read that raced the failed
// invalidation (it passed the hold before the invalidation was queued, and
// read Redis after the writer had dropped its local copy), and Redis, not
// yet invalidated, sends no change that would drop it.
func TestGate_pendingBeforeNearCache(t *testing.T) {
	r := testcontainers.Redis(t)
	c, e := nearProcess(t, r, Policy{}, nil)
	ctx := context.Background()
	var version atomic.Int64 // the database's row
	version.Store(1)
	load := func(_ context.Context, id string) (user, error) {
		return user{ID: id, Ver: int(version.Load())}, nil
	}
	loadMany := func(_ context.Context, ids []string) (map[string]user, error) {
		m := map[string]user{}
		for _, id := range ids {
			m[id] = user{ID: id, Ver: int(version.Load())}
		}
		return m, nil
	}
	for _, id := range []string{"1", "2"} {
		if u := warm(t, e, id, load); u.Ver != 1 {
			t.Fatalf("warm(%s) = %+v", id, u)
		}
	}

	// The write, whose invalidations failed and are queued: the near
	// cache keeps the entries, as after the race above. The retrier's loop
	// is kept from starting (running) until the reads are done.
	c.retry.mu.Lock()
	c.retry.running = true
	c.retry.mu.Unlock()
	version.Store(2)
	var todo []pending
	for _, id := range []string{"1", "2"} {
		key, _ := e.key(id)
		todo = append(todo, pending{key: key, verPX: e.verPX, ctr: e.ctr})
	}
	c.retry.add(todo)
	hits, bypassed := e.Stats().LocalHits, e.Stats().Bypassed

	u, err := e.Get(ctx, "1", load)
	got, gerr := e.GetMany(ctx, []string{"2"}, loadMany)
	c.retry.mu.Lock()
	c.retry.running = c.goBackground(c.retry.loop)
	c.retry.mu.Unlock()
	if err != nil || gerr != nil {
		t.Fatalf("Get = %v, GetMany = %v", err, gerr)
	}
	if u.Ver != 2 || got["2"].Ver != 2 {
		t.Errorf("with the invalidations pending: Get = %+v, GetMany = %+v; want version 2 (loaded, not the near cache's)", u, got)
	}
	if s := e.Stats(); s.LocalHits != hits || s.Bypassed != bypassed+2 {
		t.Errorf("local hits %d -> %d, bypassed %d -> %d; want no local hit and 2 bypasses", hits, s.LocalHits, bypassed, s.Bypassed)
	}
}
