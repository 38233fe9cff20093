package seqgen_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/seqgen"
)

// envNoFallback, set, runs TestGenerator_Next_redisOutage with the fallback
// off, to show that the test fails without it.
const envNoFallback = "SEQGEN_TEST_NO_FALLBACK"

// Redis is cut while two processes issue numbers from many goroutines: no
// call fails, and every number issued before, during and after the outage
// is unique and at or below the DB mark.
func TestGenerator_Next_redisOutage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proxy := newProxy(t, e.r.Addrs[0], e.r.Cluster)
	opts := e.opts(func(o *seqgen.Options) {
		o.Segment = 50
		o.BreakerCooldown = 10 * time.Millisecond
		// A cut fails at once; a generous bound keeps a busy machine's slow
		// reply (race detector, both cores taken) from counting as an
		// outage after Redis is back.
		o.RedisTimeout = 5 * time.Second
	})
	gens := []*seqgen.Generator{
		newGen(t, proxiedRedis(t, proxy), openDB(t, e.pg.DSN), opts),
		newGen(t, proxiedRedis(t, proxy), openDB(t, e.pg.DSN), opts),
	}
	if os.Getenv(envNoFallback) != "" {
		for _, g := range gens {
			seqgen.DisableFallback(g)
		}
	}
	seen := newSerials()
	burst := func(phase string, perWorker int) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for _, g := range gens {
			for range 4 {
				wg.Go(func() {
					for range perWorker {
						s, err := g.Next(context.Background(), "ORD")
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							continue
						}
						seen.add(s)
					}
				})
			}
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%s: %d of %d calls failed, the first: %v", phase, len(errs), 8*perWorker, errs[0])
		}
	}

	burst("before the outage", 25)
	proxy.Cut()
	burst("Redis cut", 50)
	var during []uint64
	for i, g := range gens {
		st := g.Stats()
		if st.Fallbacks == 0 {
			t.Fatalf("process %d: Stats with Redis cut = %+v, want calls served from the DB", i, st)
		}
		during = append(during, st.Fallbacks)
	}
	proxy.Heal()
	for i, g := range gens {
		during[i] += waitForRedis(t, g, seen.add)
	}
	burst("after the outage", 25)
	for i, g := range gens {
		if st := g.Stats(); st.Fallbacks != during[i] {
			t.Errorf("process %d: %d calls served from the DB after Redis was back", i, st.Fallbacks-during[i])
		}
	}
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
	if n, want := seen.len(), 2*4*(25+50+25); n < want {
		t.Fatalf("%d numbers collected, want at least %d", n, want)
	}
}

// Redis and the DB are both cut: Next returns ErrUnavailable at once,
// wrapping both causes, and works again once they are back.
func TestGenerator_Next_unavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rp := newProxy(t, e.r.Addrs[0], e.r.Cluster)
	pp := newProxy(t, pgHostPort(t, e.pg.DSN), false)
	db := openDB(t, throughProxy(t, e.pg.DSN, pp))
	g := newGen(t, proxiedRedis(t, rp), db, e.opts(func(o *seqgen.Options) { o.Segment = 10 }))
	mustNext(t, g, "ORD")

	rp.Cut()
	pp.Cut()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard, not the test
	defer cancel()
	for i := range 5 { // past BreakerFailures: the breaker open
		s, err := g.Next(ctx, "ORD")
		if !errors.Is(err, seqgen.ErrUnavailable) || ctx.Err() != nil {
			t.Fatalf("Next #%d with Redis and the DB cut = %q, %v; want ErrUnavailable", i, s, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "redis") || !strings.Contains(msg, "reserve") {
			t.Fatalf("ErrUnavailable %q does not name both causes", msg)
		}
	}
	if _, err := g.NextN(ctx, "ORD", 3); !errors.Is(err, seqgen.ErrUnavailable) {
		t.Fatalf("NextN with Redis and the DB cut = %v; want ErrUnavailable", err)
	}
	pp.Heal()
	if _, err := g.Next(ctx, "ORD"); err != nil {
		t.Fatalf("Next with the DB back, Redis still cut: %v", err)
	}
}

// Redis stalls (the client's own read timeout is a minute): each call gets
// no reply within RedisTimeout and is served from the DB; after
// BreakerFailures of them calls skip Redis. A caller's shorter deadline
// wins, and says nothing about Redis.
func TestGenerator_Next_redisStalled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proxy := newProxy(t, e.r.Addrs[0], e.r.Cluster)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { _ = client.Close() })
	opts := e.opts(func(o *seqgen.Options) { o.BreakerCooldown, o.RedisTimeout = time.Hour, seqgen.DefaultRedisTimeout })
	g := newGen(t, client, e.pg.DB, opts)
	other := newGen(t, client, e.pg.DB, opts)
	t.Cleanup(proxy.Heal) // before the Generators close: the stalled calls end
	seen := newSerials()
	seen.add(mustNext(t, g, "ORD"))
	seen.add(mustNext(t, other, "ORD"))

	proxy.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if s, err := other.Next(ctx, "ORD"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with a deadline shorter than RedisTimeout = %q, %v; want the caller's deadline", s, err)
	}
	if st := other.Stats(); st.Fallbacks != 0 || st.RedisErrors != 0 {
		t.Fatalf("Stats after the caller's deadline = %+v, want no fallback, no Redis error", st)
	}

	const calls = 10
	for range calls {
		seen.add(mustNext(t, g, "ORD"))
	}
	st := g.Stats()
	if st.Fallbacks != calls {
		t.Errorf("Fallbacks = %d, want all %d calls served from the DB", st.Fallbacks, calls)
	}
	if st.RedisErrors != seqgen.DefaultBreakerFailures {
		t.Errorf("RedisErrors = %d, want %d: the breaker skips Redis after them", st.RedisErrors, seqgen.DefaultBreakerFailures)
	}
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
}

// serials collects numbers from many goroutines and remembers duplicates.
type serials struct {
	mu   sync.Mutex
	all  map[string]bool // guarded by mu
	dups []string        // guarded by mu
}

func newSerials() *serials { return &serials{all: map[string]bool{}} }

func (s *serials) add(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.all[v] {
		s.dups = append(s.dups, v)
	}
	s.all[v] = true
}

func (s *serials) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

// check reports duplicates, and numbers of ORD on 2026-11-29 above mark.
func (s *serials) check(mark int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dups) > 0 {
		return fmt.Errorf("%d numbers issued twice, e.g. %q", len(s.dups), s.dups[0])
	}
	for v := range s.all {
		var n int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(v, "ORD20261129"), "%d", &n); err != nil || n > mark {
			return fmt.Errorf("%q above the DB mark %d (%v)", v, mark, err)
		}
	}
	return nil
}

// waitForRedis calls Next on g until a call is served by Redis again,
// passing each number to record, and returns how many were served from
// the DB meanwhile.
func waitForRedis(t testing.TB, g *seqgen.Generator, record func(string)) uint64 {
	t.Helper()
	start := g.Stats().Fallbacks
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard, not the test
	defer cancel()
	for {
		before := g.Stats().Fallbacks
		s, err := g.Next(ctx, "ORD")
		if err != nil {
			t.Fatalf("Next while Redis comes back: %v", err)
		}
		record(s)
		if after := g.Stats().Fallbacks; after == before {
			return after - start
		}
		waitABit()
	}
}

// newProxy returns a fault proxy in front of addr, closed at cleanup.
func newProxy(t testing.TB, addr string, cluster bool) *faultproxy.Proxy {
	t.Helper()
	if cluster {
		t.Skip("one proxy cannot stand for a Redis Cluster")
	}
	p, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// proxiedRedis returns a client of the Redis behind p, as one process
// would have, closed at cleanup.
func proxiedRedis(t testing.TB, p *faultproxy.Proxy) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// openDB opens a pool of its own on dsn, closed at cleanup.
func openDB(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

// pgHostPort returns the host:port of a URL DSN.
func pgHostPort(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Skipf("PostgreSQL DSN is not a URL with a host: %v", err)
	}
	if u.Port() == "" {
		return u.Host + ":5432"
	}
	return u.Host
}

// throughProxy returns dsn pointed at p.
func throughProxy(t testing.TB, dsn string, p *faultproxy.Proxy) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	return u.String()
}

// The DB connection the generator pooled is terminated by the server
// (pg_terminate_backend, as an operator or a failover does) while Redis is
// down: the reservation that finds it dead is tried again on a new
// connection, and the caller gets its number.
func TestGenerator_Next_terminatedConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proxy := newProxy(t, e.r.Addrs[0], e.r.Cluster)
	db := openDB(t, e.pg.DSN)
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1) // the connection the test terminates is the one the next call draws
	g := newGen(t, proxiedRedis(t, proxy), db, e.opts(func(o *seqgen.Options) { o.Segment = 10 }))
	mustNext(t, g, "ORD")

	var pid int
	if err := db.Raw("SELECT pg_backend_pid()").Scan(&pid).Error; err != nil {
		t.Fatal(err)
	}
	var ended bool // pg_terminate_backend with a timeout waits for the backend to exit
	if err := e.pg.DB.Raw("SELECT pg_terminate_backend(?, 10000)", pid).Scan(&ended).Error; err != nil || !ended {
		t.Fatalf("terminate backend %d: %v, %v", pid, ended, err)
	}
	proxy.Cut()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard, not the test
	defer cancel()
	if s, err := g.Next(ctx, "ORD"); err != nil {
		t.Fatalf("Next with Redis cut and the pooled DB connection terminated = %q, %v; want a number", s, err)
	}
	if st := g.Stats(); st.Fallbacks != 1 {
		t.Fatalf("Stats().Fallbacks = %d, want 1 (the number came from the DB)", st.Fallbacks)
	}
}

// Redis stalls one number before the counter's mark: the calls that give
// up on their reply run when it heals, and the first takes the lease. Its
// reply, arriving after the caller has moved on to the DB, releases that
// lease at once, even though the breaker now skips Redis: otherwise every
// process would find the counter at its mark and wait LeaseTTL for a
// holder that will never reserve.
func TestGenerator_Next_abandonedLeaseReleased(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proxy := newProxy(t, e.r.Addrs[0], e.r.Cluster)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { _ = client.Close() })
	g := newGen(t, client, e.pg.DB, e.opts(func(o *seqgen.Options) {
		o.Segment, o.RefillAt = 2, 1 // the lease goes to the call that issues the mark
		// RedisTimeout is what each stalled call waits; it must also be
		// long enough that the first call, before the stall, never times
		// out on a busy machine (it would leave the breaker one failure
		// closer to open, and the counts below would be off by one).
		o.LeaseTTL, o.BreakerCooldown, o.RedisTimeout = time.Hour, time.Hour, time.Second
	}))
	t.Cleanup(proxy.Heal)
	seen := newSerials()
	seen.add(mustNext(t, g, "ORD")) // 1 of the segment (0, 2]
	if st := g.Stats(); st.RedisErrors != 0 || st.Fallbacks != 0 {
		t.Fatalf("Stats before the stall = %+v: the first call did not get its number from Redis", st)
	}

	proxy.Stall()
	for range seqgen.DefaultBreakerFailures + 1 { // the last one skips Redis
		seen.add(mustNext(t, g, "ORD"))
	}
	if st := g.Stats(); st.Fallbacks != seqgen.DefaultBreakerFailures+1 || st.RedisErrors != seqgen.DefaultBreakerFailures {
		t.Fatalf("Stats with Redis stalled = %+v, want %d fallbacks, %d Redis errors", st, seqgen.DefaultBreakerFailures+1, seqgen.DefaultBreakerFailures)
	}
	proxy.Heal()

	// The first stalled call issues the mark, 2, and takes the lease in
	// the same script; once the counter reads 2 the lease was granted.
	keys := e.r.Namespace + ":seq:{ORD}:20261129"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard, not the test
	defer cancel()
	for {
		c, err := e.r.Client.Get(ctx, keys).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("the stalled calls did not run: counter %q, %v", c, err)
		}
		if c == "2" {
			break
		}
		waitABit()
	}
	for {
		n, err := e.r.Client.Exists(ctx, keys+":lease").Result()
		if err != nil {
			t.Fatalf("the lease a stalled call took is still held (LeaseTTL is an hour): %v", err)
		}
		if n == 0 {
			break
		}
		waitABit()
	}
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
}

// Every session of the generators' pool is terminated, again and again,
// while Redis is down and they reserve in the DB from several goroutines:
// a reservation may lose its session anywhere, before its BEGIN or
// between its statements, and another pooled connection may be dying
// too. Each call still gets a number, never twice.
func TestGenerator_Next_sessionsTerminated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proxy := newProxy(t, e.r.Addrs[0], e.r.Cluster)
	const app, workers, rounds = "seqgen-terminated", 4, 20
	u, err := url.Parse(e.pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db := openDB(t, u.String())
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(workers)
	sqlDB.SetMaxIdleConns(workers)
	client := proxiedRedis(t, proxy)
	proxy.Cut()
	seen := newSerials()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, workers)
	var got [workers]atomic.Int64 // numbers each worker has
	for w := range workers {
		g := newGen(t, client, db, e.opts(func(o *seqgen.Options) { o.Segment = 1 })) // every number a reservation
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, err := g.Next(context.Background(), "ORD")
				if err != nil {
					errs <- err
					return
				}
				seen.add(s)
				got[w].Add(1)
			}
		}()
	}
	for range rounds {
		var before [workers]int64
		for w := range got {
			before[w] = got[w].Load()
		}
		if err := e.pg.DB.Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ?", app).Error; err != nil {
			t.Fatal(err)
		}
		// Each worker gets two numbers, the second begun after the
		// terminate, before the next round; or the round failed one.
		for w := 0; w < workers && len(errs) == 0; {
			if got[w].Load() >= before[w]+2 {
				w++
				continue
			}
			waitABit()
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Next with Redis cut and the pool's sessions being terminated: %v", err)
	}
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
}

// The refill lease is held by a caller that will never reserve (its reply
// was lost, or it is stuck) while the counter is at its mark: a call waits
// at most 5 × RedisTimeout for it, then takes its number from the DB,
// instead of waiting LeaseTTL (an hour here) or its own deadline.
func TestGenerator_Next_leaseHolderStuck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, func(o *seqgen.Options) {
		o.Segment, o.RefillAt = 2, 1 // the lease is taken only at the mark
		// RedisTimeout a second (the wait 5 s): at 100 ms a call slowed by
		// a busy machine timed out, and the Redis error, not the wait,
		// made the fallback.
		o.LeaseTTL, o.RedisTimeout = time.Hour, time.Second
	})
	seen := newSerials()
	seen.add(mustNext(t, g, "ORD")) // 1 of the segment (0, 2]
	keys := e.r.Namespace + ":seq:{ORD}:20261129"
	if err := e.r.Client.Set(context.Background(), keys+":lease", "a holder that never reserves", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	seen.add(mustNext(t, g, "ORD"))                                       // 2, the mark: the lease is held, so no refill starts
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard, not the test
	defer cancel()
	s, err := g.Next(ctx, "ORD")
	if err != nil {
		t.Fatalf("Next at the mark with the lease held by a stuck holder = %q, %v; want a number from the DB", s, err)
	}
	seen.add(s)
	if st := g.Stats(); st.Fallbacks != 1 || st.Waits == 0 || st.RedisErrors != 0 {
		t.Fatalf("Stats = %+v, want 1 fallback after waiting, no Redis error", st)
	}
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
}
