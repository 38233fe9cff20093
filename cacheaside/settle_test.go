package cacheaside

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// downHook fails every command of a client while down is set, before it
// reaches Redis (a process that cannot reach Redis at all).
type downHook struct{ down atomic.Bool }

var errDown = errors.New("test: redis unreachable")

func (h *downHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *downHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.down.Load() && !handshake(cmd.Name()) {
			cmd.SetErr(errDown)
			return errDown
		}
		return next(ctx, cmd)
	}
}

func (h *downHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.down.Load() {
			for _, c := range cmds {
				c.SetErr(errDown)
			}
			return errDown
		}
		return next(ctx, cmds)
	}
}

// settleDB is one row's version; its loader can be held after it read
// the row (gate), to let a write commit while the load runs.
type settleDB struct {
	ver    atomic.Int64
	gate   atomic.Pointer[chan struct{}] // when set, the next load waits on it
	loaded chan struct{}                 // a held load read the row
}

func (db *settleDB) load(_ context.Context, id string) (user, error) {
	v := db.ver.Load()
	if g := db.gate.Swap(nil); g != nil {
		db.loaded <- struct{}{}
		<-*g
	}
	return user{ID: id, Ver: int(v)}, nil
}

// settleRace runs, on reader, a Get of id whose load reads the row and
// then waits while the writer (whose Redis is unreachable) commits a new
// version and fails to invalidate it, as a write that returned nil with
// its invalidation queued. It returns what a Get of id that begins after
// the write returns.
func settleRace(t *testing.T, reader, writer *Entity[user], wdown *downHook, db *settleDB, id string) user {
	t.Helper()
	ctx := context.Background()
	gate := make(chan struct{})
	db.gate.Store(&gate)
	first := make(chan error, 1)
	go func() {
		_, err := reader.Get(ctx, id, db.load)
		first <- err
	}()
	<-db.loaded // the reader's load read the row: the write commits now
	wdown.down.Store(true)
	db.ver.Add(1)
	if err := writer.Invalidate(ctx, id); !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("writer's Invalidate: %v, want ErrInvalidationPending", err)
	}
	close(gate) // the write completed; the reader's load ends and stores
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	u, err := reader.Get(ctx, id, db.load)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// settlePair returns a reader and a writer entity (two processes) over r,
// the writer's Redis reachable until its hook says otherwise.
func settlePair(t *testing.T, r *testcontainers.RedisNamespace, s Strategy, readerHook redis.Hook) (reader, writer *Entity[user], wdown *downHook) {
	t.Helper()
	p := Policy{Strategy: s, TTL: time.Minute}
	rc := r.NewClient(t)
	if readerHook != nil {
		rc.AddHook(readerHook)
	}
	reader = newEntity[user](t, newCache(t, rc, r.Namespace, nil), "settle", p)
	wc := r.NewClient(t)
	wdown = &downHook{}
	wc.AddHook(wdown)
	writer = newEntity[user](t, newCache(t, wc, r.Namespace, nil), "settle", p)
	return reader, writer, wdown
}

// withRuleOff runs f with the settle window switched off.
func withRuleOff(t *testing.T, f func()) {
	testswitch.SettleOff.Store(true)
	defer testswitch.SettleOff.Store(false)
	f()
}

// A reader that saw Redis fail stores no load's result in its settle
// window: a load that read the row before a write whose invalidation
// waits in the writer's retrier (the writer's Redis unreachable) is not
// cached, and a Get that begins after the write returned gets the new
// row. With the rule off the old row is cached and served.
func TestSettle_sawFailure_noOlderFill(t *testing.T) {
	for _, s := range []Strategy{None, Mutex} {
		t.Run(s.String(), func(t *testing.T) {
			run := func() user {
				rdown := &downHook{}
				reader, writer, wdown := settlePair(t, testcontainers.Redis(t), s, rdown)
				db := &settleDB{loaded: make(chan struct{})}
				// The reader sees Redis fail once, and Redis answers again.
				rdown.down.Store(true)
				if _, err := reader.Get(context.Background(), "other", db.load); err != nil {
					t.Fatal(err)
				}
				rdown.down.Store(false)
				u := settleRace(t, reader, writer, wdown, db, "1")
				if u.Ver != int(db.ver.Load()) {
					return u
				}
				if !reader.c.Settling() || reader.Stats().Settled == 0 {
					t.Fatalf("reader not settling after a failure: %+v", reader.Stats())
				}
				return u
			}
			if u := run(); u.Ver != 1 {
				t.Fatalf("read v%d after v1 completed", u.Ver)
			}
			withRuleOff(t, func() {
				if u := run(); u.Ver != 0 {
					t.Fatalf("rule off: read v%d; the test no longer shows the stale fill", u.Ver)
				}
			})
		})
	}
}

// A reader that saw no failure finds from the epoch marker that Redis
// lost its data (restarted empty between two of its calls, here every key
// of the namespace deleted): its fill is refused and it settles, so a load
// that read the row before a write whose invalidation waits in the
// writer's retrier is not cached. With the rule off it is.
func TestSettle_dataLost_markerRefusesFill(t *testing.T) {
	for _, s := range []Strategy{None, Mutex} {
		t.Run(s.String(), func(t *testing.T) {
			run := func() (user, *Entity[user]) {
				r := testcontainers.Redis(t)
				reader, writer, wdown := settlePair(t, r, s, nil)
				db := &settleDB{loaded: make(chan struct{})}
				ctx := context.Background()
				for i := range 3 { // fills: the reader knows the marker
					if _, err := reader.Get(ctx, strconv.Itoa(i+10), db.load); err != nil {
						t.Fatal(err)
					}
				}
				if reader.c.Settling() {
					t.Fatal("settling with no failure")
				}
				if err := testcontainers.DeleteNamespace(ctx, r.NewClient(t), r.Namespace); err != nil {
					t.Fatal(err)
				}
				return settleRace(t, reader, writer, wdown, db, "1"), reader
			}
			u, reader := run()
			if u.Ver != 1 {
				t.Fatalf("read v%d after v1 completed", u.Ver)
			}
			if reader.c.DataLosses() != 1 || !reader.c.Settling() {
				t.Fatalf("data losses %d, settling %v", reader.c.DataLosses(), reader.c.Settling())
			}
			withRuleOff(t, func() {
				if u, _ := run(); u.Ver != 0 {
					t.Fatalf("rule off: read v%d; the test no longer shows the stale fill", u.Ver)
				}
			})
		})
	}
}

// The settle window ends: fills are stored again once it has passed, and
// the marker written anew after a loss is known to every Cache, which
// then fill with no further loss.
func TestSettle_windowEnds(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	mk := func() *Entity[user] {
		c := newCache(t, r.NewClient(t), r.Namespace, &Options{SettleWindow: 100 * time.Millisecond})
		return newEntity[user](t, c, "settle", Policy{Strategy: Mutex, TTL: time.Minute})
	}
	a, b := mk(), mk()
	waitFor(t, 10*time.Second, func() bool { return a.c.settle.epoch.Load() != nil && b.c.settle.epoch.Load() != nil })
	var ld counter
	for _, e := range []*Entity[user]{a, b} {
		if _, err := e.Get(ctx, "1", ld.load); err != nil {
			t.Fatal(err)
		}
	}
	if err := testcontainers.DeleteNamespace(ctx, r.NewClient(t), r.Namespace); err != nil {
		t.Fatal(err)
	}
	// a finds the marker gone, b the one a wrote: each settles once.
	for _, e := range []*Entity[user]{a, b} {
		if _, err := e.Get(ctx, "2", ld.load); err != nil {
			t.Fatal(err)
		}
		if e.c.DataLosses() != 1 || !e.c.Settling() {
			t.Fatalf("data losses %d, settling %v", e.c.DataLosses(), e.c.Settling())
		}
		if err := e.Invalidate(ctx, "2"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, func() bool { return !a.c.Settling() && !b.c.Settling() })
	for i, e := range []*Entity[user]{a, b} {
		if _, err := e.Get(ctx, "3"+strconv.Itoa(i), ld.load); err != nil {
			t.Fatal(err)
		}
		calls := ld.calls.Load()
		if _, err := e.Get(ctx, "3"+strconv.Itoa(i), ld.load); err != nil {
			t.Fatal(err)
		}
		if ld.calls.Load() != calls {
			t.Fatal("not cached after the settle window")
		}
		if e.c.DataLosses() != 1 {
			t.Fatalf("data losses %d after the window", e.c.DataLosses())
		}
	}
}
