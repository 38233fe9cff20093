package cacheaside

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// linkCut fails a client's commands while it is cut, as a broken network
// link would: half of them before they reach Redis, the other half after
// Redis ran them (the reply is lost).
type linkCut struct{ cut atomic.Bool }

var errLinkCut = errors.New("test: link to redis cut")

func (l *linkCut) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *linkCut) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return l.fail(ctx, []redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

func (l *linkCut) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return l.fail(ctx, cmds, func() error { return next(ctx, cmds) })
	}
}

func (l *linkCut) fail(_ context.Context, cmds []redis.Cmder, next func() error) error {
	if !l.cut.Load() || handshake(cmds[0].Name()) {
		return next()
	}
	if rand.IntN(2) == 0 {
		_ = next() // sent and run, reply lost
	}
	for _, c := range cmds {
		c.SetErr(errLinkCut)
	}
	return errLinkCut
}

// historyDB is the source of truth of the history test: one version
// counter per id. A write increments it; loaders read it.
type historyDB struct{ vers []atomic.Int64 }

func (db *historyDB) load(_ context.Context, id string) (user, error) {
	n, _ := strconv.Atoi(id)
	v := db.vers[n].Load()
	if rand.IntN(2) == 0 {
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // the value ages while the load runs
	}
	return user{ID: id, Ver: int(v)}, nil
}

func (db *historyDB) loadMany(ctx context.Context, ids []string) (map[string]user, error) {
	out := make(map[string]user, len(ids))
	for _, id := range ids {
		u, _ := db.load(ctx, id)
		out[id] = u
	}
	return out, nil
}

// historyOp is one completed read (start, version read) or write (end,
// version written) of an id.
type historyOp struct {
	id  int
	at  time.Time
	ver int
}

type history struct {
	mu     sync.Mutex
	reads  []historyOp
	writes []historyOp
}

// size returns the number of writes so far.
func (h *history) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.writes)
}

func (h *history) add(list *[]historyOp, op historyOp) {
	h.mu.Lock()
	*list = append(*list, op)
	h.mu.Unlock()
}

// stale returns the reads that returned a version older than a write
// that completed before the read began.
func (h *history) stale(ids int) []string {
	byID := make([][]historyOp, ids)
	for _, w := range h.writes {
		byID[w.id] = append(byID[w.id], w)
	}
	for _, ws := range byID {
		sort.Slice(ws, func(i, j int) bool { return ws[i].at.Before(ws[j].at) })
		for i := 1; i < len(ws); i++ { // newest version completed by ws[i].at
			ws[i].ver = max(ws[i].ver, ws[i-1].ver)
		}
	}
	var bad []string
	for _, r := range h.reads {
		ws := byID[r.id]
		n := sort.Search(len(ws), func(i int) bool { return !ws[i].at.Before(r.at) })
		if n > 0 && r.ver < ws[n-1].ver {
			bad = append(bad, strconv.Itoa(r.id)+": read v"+strconv.Itoa(r.ver)+" after v"+strconv.Itoa(ws[n-1].ver)+" completed")
		}
	}
	return bad
}

const (
	historyProcs   = 4
	historyReaders = 6 // per process
	historyIDs     = 3
	historyRun     = 1200 * time.Millisecond
	historyMinOps  = 100 // writes, and failed-open reads of the cut process
)

// failedOpen returns how many of e's reads found Redis failing (or the
// breaker open).
func failedOpen(e *Entity[user]) uint64 {
	s := e.Stats()
	return s.CacheErrors + s.Bypassed
}

// runHistory runs simulated processes on r for historyRun: process 0's
// link to Redis is cut and restored at random, the others write (source of
// truth first, then Invalidate), and all of them read with Get and
// GetMany. It returns the stale reads.
func runHistory(t *testing.T, r *testcontainers.RedisNamespace, s Strategy) []string {
	p := Policy{Strategy: s, TTL: 150 * time.Millisecond, LockTTL: 300 * time.Millisecond, Beta: 20}
	var cut linkCut
	ents := make([]*Entity[user], historyProcs)
	for i := range ents {
		client := r.NewClient(t)
		opts := &Options{}
		if i == 0 {
			client.AddHook(&cut)
			opts = &Options{BreakerThreshold: 3, BreakerCooldown: 20 * time.Millisecond}
		}
		ents[i] = newEntity[user](t, newCache(t, client, r.Namespace, opts), "hist", p)
	}
	db := &historyDB{vers: make([]atomic.Int64, historyIDs)}
	var h history
	w := newCrew()
	ctx := context.Background()
	mix := readMix{draw: func() int { return rand.IntN(historyIDs) }, many: 3, ids: 2}
	for pi, e := range ents {
		for range historyReaders {
			w.loop(func() bool { historyRead(ctx, e, db, &h, w.report, mix); return true })
		}
		if pi == 0 {
			continue
		}
		w.loop(func() bool { // a writer
			n := rand.IntN(historyIDs)
			ver := db.vers[n].Add(1)
			if err := e.Invalidate(ctx, strconv.Itoa(n)); err != nil {
				w.report(err)
				return false
			}
			h.add(&h.writes, historyOp{id: n, at: time.Now(), ver: int(ver)})
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // pacing, not synchronisation
			return true
		})
	}
	// Run for historyRun, and on until enough happened to tell anything.
	start := time.Now()
	for time.Since(start) < historyRun || h.size() < historyMinOps || failedOpen(ents[0]) < historyMinOps {
		if time.Since(start) > 60*time.Second {
			_ = w.wait()
			t.Fatalf("too little happened in a minute: %d writes, %d failed-open reads", h.size(), failedOpen(ents[0]))
		}
		cut.cut.Store(!cut.cut.Load())
		time.Sleep(time.Duration(5+rand.IntN(40)) * time.Millisecond)
	}
	cut.cut.Store(false)
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	st := ents[0].Stats()
	t.Logf("%v: %d reads, %d writes; cut process: %d cache errors, %d bypassed, %d loads",
		s, len(h.reads), len(h.writes), st.CacheErrors, st.Bypassed, st.Loads)
	return h.stale(historyIDs)
}

// readMix is how a history run's readers read: draw picks an id, one
// read in many is a GetMany of ids ids (the others are Gets).
type readMix struct {
	draw      func() int
	many, ids int
}

// historyRead is one Get or GetMany of ids m.draw picks, recorded with
// the time it began. ErrOverloaded and ErrWaitTimeout are allowed
// answers; other errors are reported.
func historyRead(ctx context.Context, e *Entity[user], db *historyDB, h *history, report func(error), m readMix) {
	start := time.Now()
	if rand.IntN(m.many) > 0 {
		n := m.draw()
		u, err := e.Get(ctx, strconv.Itoa(n), db.load)
		switch {
		case err == nil:
			h.add(&h.reads, historyOp{id: n, at: start, ver: u.Ver})
		case !errors.Is(err, ErrOverloaded) && !errors.Is(err, ErrWaitTimeout):
			report(err)
		}
		return
	}
	ids := make([]string, m.ids)
	for i := range ids {
		ids[i] = strconv.Itoa(m.draw())
	}
	got, err := e.GetMany(ctx, ids, db.loadMany)
	if err != nil && !errors.Is(err, ErrOverloaded) && !errors.Is(err, ErrWaitTimeout) {
		report(err)
	}
	for id, u := range got {
		n, _ := strconv.Atoi(id)
		h.add(&h.reads, historyOp{id: n, at: start, ver: u.Ver})
	}
}

// crew runs the goroutines of a history run: each loops until the crew
// stops or it returns false, and the first error one reports is kept.
type crew struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	errs chan error
}

func newCrew() *crew { return &crew{errs: make(chan error, 1)} }

// report keeps err if it is the first.
func (c *crew) report(err error) {
	select {
	case c.errs <- err:
	default:
	}
}

// loop runs f in a goroutine of its own until the crew stops or f
// returns false.
func (c *crew) loop(f func() bool) {
	c.wg.Go(func() {
		for !c.stop.Load() && f() {
		}
	})
}

// wait stops the crew (if it is not stopped yet), waits for its
// goroutines and returns the first error reported, if any.
func (c *crew) wait() error {
	c.stop.Store(true)
	c.wg.Wait()
	select {
	case err := <-c.errs:
		return err
	default:
		return nil
	}
}

// No read returns a version older than a write that completed before the
// read began, for any strategy, while one process's link to Redis is cut
// and restored at random (its reads fail open to the loader) and the
// others write.
func TestHistory_noStaleRead(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		for _, s := range []Strategy{None, SingleFlight, Mutex, AsyncRefresh, EarlyRefresh} {
			t.Run(name+"/"+s.String(), func(t *testing.T) {
				if bad := runHistory(t, redis(t), s); len(bad) > 0 {
					t.Fatalf("%d stale reads, first: %s", len(bad), bad[0])
				}
			})
		}
	}
}
