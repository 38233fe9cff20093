package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/backoff"
	"gorm.io/gorm"
)

// convergence is the result of the converge check.
type convergence struct {
	keys      int
	ambiguous int           // keys invalidated because a write's outcome was unknown
	divergent []int64       // keys whose cache still differs from the table
	recovery  time.Duration // from healing until the cache matched the table
	err       error
}

// converge waits, up to 30 seconds, for the cache to hold what the table
// holds for every key, and reports how long that took after the faults
// were healed. Keys whose last write's outcome is unknown (the reply to its
// COMMIT was lost, its connection cut) are invalidated first, as repo/cdc
// would.
func (rn *run) converge(ctx context.Context, healed time.Duration) convergence {
	c := redisClient(rn.env.cacheRedis.Addr)
	defer c.Close()
	cache, err := cacheaside.New(c, &cacheaside.Options{Namespace: rn.env.ns})
	if err != nil {
		return convergence{err: err}
	}
	defer cache.Close()
	ents := make([]*cacheaside.Entity[Item], len(strategies))
	for si, s := range strategies {
		if ents[si], err = cacheaside.NewEntity[Item](cache, entityName("items", s), policy(s)); err != nil {
			return convergence{err: err}
		}
	}
	var conv convergence
	for id, last := range lastWrites(rn.hist.all()) {
		if last.Applied != Maybe || id >= 9000 {
			continue
		}
		conv.ambiguous++
		if err := ents[strategyOf(id)].Invalidate(ctx, strconv.FormatInt(id, 10)); err != nil {
			conv.err = err
		}
	}
	var ids []int64
	for id := range rn.keys {
		if id < 9000 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	conv.keys = len(ids)
	deadline := time.Now().Add(30 * time.Second)
	for {
		conv.divergent = rn.divergent(ctx, ents, ids)
		if len(conv.divergent) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			conv.recovery = rn.clk.now() - healed
			return conv
		}
		time.Sleep(100 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// lastWrites returns, per key, the write of the highest version that may
// have happened. Writes of a key are serialised: when it returned nil (or
// committed and left its invalidation to the background retries), the
// cache must come to hold it; when its outcome is unknown, only a reader
// of the WAL (repo/cdc) could tell the cache.
func lastWrites(ops []Op) map[int64]Op {
	last := map[int64]Op{}
	for _, op := range ops {
		if !isWrite(op.Kind) || op.Applied == No {
			continue
		}
		if l, ok := last[op.Keys[0]]; !ok || op.Versions[0] > l.Versions[0] {
			last[op.Keys[0]] = op
		}
	}
	return last
}

// divergent returns the keys whose cached entry differs from the table:
// a cached value of another version, or a cached "not found" of a row that
// exists (or the other way round). Keys not cached are loaded and agree.
func (rn *run) divergent(ctx context.Context, ents []*cacheaside.Entity[Item], ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		var row Item
		err := rn.env.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
		present := err == nil
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			out = append(out, id)
			continue
		}
		loaded := false
		got, gerr := ents[strategyOf(id)].Get(ctx, strconv.FormatInt(id, 10), func(ctx context.Context, _ string) (Item, error) {
			loaded = true
			if !present {
				return Item{}, cacheaside.ErrNotFound
			}
			return row, nil
		})
		switch {
		case loaded:
		case gerr == nil && present && got.Version == row.Version:
		case errors.Is(gerr, cacheaside.ErrNotFound) && !present:
		default:
			out = append(out, id)
		}
	}
	return out
}

// burst runs the loads check: for each strategy but None, Rounds times,
// one write invalidates the hot row, then every worker of every process
// reads it at once; the loader calls the burst made, across processes,
// are counted. The reads are recorded like any other.
func (rn *run) burst(ctx context.Context) []loadRound {
	var rounds []loadRound
	p0 := rn.procs[0]
	var caches []*cacheaside.Cache
	for _, p := range rn.procs {
		caches = append(caches, p.cache)
	}
	for si, s := range strategies {
		if s == cacheaside.None {
			continue
		}
		name := entityName("hot", s)
		max := 1
		if s == cacheaside.SingleFlight {
			max = len(rn.procs) // one per process
		}
		for r := 0; r < rn.cfg.Rounds && ctx.Err() == nil; r++ {
			write := func() error { return rn.write(p0.id, p0.hot[si], OpUpdate, hotID(si)) }
			if err := rn.cleanWrite(ctx, p0.cache, write); err != nil {
				rn.logf("loads: the write before a burst failed: %v", err)
				continue
			}
			if err := waitSettled(ctx, caches); err != nil {
				rn.logf("loads: %v", err)
			}
			before, whyBefore := rn.loadsOf(name), rn.reasonsOf(name)
			at := rn.clk.now()
			start := make(chan struct{})
			var wg sync.WaitGroup
			for _, p := range rn.procs {
				for g := 0; g < rn.cfg.Goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						rn.read(p.id, p.hot[si], hotID(si))
					}()
				}
			}
			close(start)
			wg.Wait()
			rounds = append(rounds, loadRound{Entity: name, Loads: rn.loadsOf(name) - before, Max: max, At: at,
				Why: rn.reasonsOf(name).minus(whyBefore)})
		}
	}
	return rounds
}

// cleanWrite makes a write, trying again while it fails (a pooled
// connection the faults broke, a breaker not yet closed), and waits until
// c, the writer's cache, holds no pending invalidation, which would send
// the reads after it past Redis.
func (rn *run) cleanWrite(ctx context.Context, c *cacheaside.Cache, write func() error) error {
	b := backoff.New(10*time.Millisecond, 200*time.Millisecond)
	written := false
	for try := 0; try < 30; try++ {
		if !written {
			err := write()
			written = err == nil
			if err != nil {
				rn.logf("the write before a check failed, trying again: %v", err)
			}
		}
		if written && c.PendingInvalidations() == 0 {
			return nil
		}
		if err := b.Wait(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("no clean write after 30 tries (written %v, %d invalidations pending)",
		written, c.PendingInvalidations())
}

// waitSettled waits until none of caches is in its settle window
// (cacheaside.Options.SettleWindow, begun by the faults or by a pooled
// connection they broke), in which misses load uncached: a burst then
// would measure the window, not the strategy, and a load could not use a
// replica.
func waitSettled(ctx context.Context, caches []*cacheaside.Cache) error {
	b := backoff.New(10*time.Millisecond, 200*time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for {
		settling := 0
		for _, c := range caches {
			if c != nil && c.Settling() {
				settling++
			}
		}
		if settling == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes still settling after a minute", settling)
		}
		if err := b.Wait(ctx); err != nil {
			return err
		}
	}
}

// reasonsOf sums, over the processes, the events of entity that explain
// loads (loadCounter.reasons).
func (rn *run) reasonsOf(entity string) counts {
	sum := counts{}
	for _, p := range rn.procs {
		for k, v := range p.loads.reasons(entity) {
			sum[k] += v
		}
	}
	return sum
}

func (rn *run) loadsOf(entity string) int {
	n := 0
	for _, p := range rn.procs {
		n += p.loads.get(entity)
	}
	return n
}
