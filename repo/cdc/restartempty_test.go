package cdc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// envFilterTrustOff, set to anything, runs TestInvalidator_redisRestartedEmpty
// with testswitch.FilterTrustOff: the test then fails, finding the wrong
// "not found"s that the filters' completeness rule prevents.
const envFilterTrustOff = "CDC_TEST_FILTER_TRUST_OFF"

// published is the rows known to exist: each is added once its insert
// committed and, for a row inserted with plain SQL, once the Invalidator
// applied it (Wait, the barrier for reading an out-of-band write through
// the cache). A read of a row picked from it began after that.
type published struct {
	mu  sync.RWMutex // guards ids
	ids []int64
}

func (p *published) add(id int64) {
	p.mu.Lock()
	p.ids = append(p.ids, id)
	p.mu.Unlock()
}

// pick returns a row: half the time one of the newest twenty.
func (p *published) pick(r *rand.Rand) int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n := len(p.ids)
	if r.IntN(2) == 0 && n > 20 {
		return p.ids[n-1-r.IntN(20)]
	}
	return p.ids[r.IntN(n)]
}

// readTally counts the reads of existing rows, by id and by unique value,
// and the wrong "not found"s among them.
type readTally struct {
	byID, byEmail           atomic.Int64 // reads that returned
	wrongByID, wrongByEmail atomic.Int64 // of which ErrNotFound
	errs                    atomic.Int64 // reads that failed otherwise (Redis down)
	mu                      sync.Mutex   // guards first
	first                   string       // the first wrong "not found"
}

func (c *readTally) wrong() int64 { return c.wrongByID.Load() + c.wrongByEmail.Load() }
func (c *readTally) reads() int64 { return c.byID.Load() + c.byEmail.Load() }

func (c *readTally) record(what string, id int64, err error, n, wrong *atomic.Int64) {
	switch {
	case err == nil:
		n.Add(1)
	case errors.Is(err, repo.ErrNotFound):
		n.Add(1)
		wrong.Add(1)
		c.mu.Lock()
		if c.first == "" {
			c.first = fmt.Sprintf("%s of row %d: %v", what, id, err)
		}
		c.mu.Unlock()
	default:
		c.errs.Add(1)
	}
}

func email(id int64) string { return fmt.Sprintf("u%d@example.com", id) }

// Issue 28: the cache's Redis is killed (SIGKILL) and restarted empty,
// twice, under load: readers get existing rows by id and by unique email,
// a writer creates rows through the repository, another inserts rows with
// plain SQL that the Invalidator applies. Both filters (primary key and
// email) lose their keys with each restart. No read of a row that existed
// before it began may answer ErrNotFound, at any time, and each filter is
// trusted again after each restart through its own automatic rebuild (the
// test calls no WarmFilter after the start). With CDC_TEST_FILTER_TRUST_OFF
// set, the rule is off and the test fails: the emptied filters answer
// "absent" for every row.
func TestInvalidator_redisRestartedEmpty(t *testing.T) {
	if os.Getenv(envFilterTrustOff) != "" {
		// Process-wide: the test runs alone, before the parallel ones.
		testswitch.FilterTrustOff.Store(true)
		defer testswitch.FilterTrustOff.Store(false)
	} else {
		t.Parallel() // its Redis is its own
	}
	srv := testcontainers.NewRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(t, rdb, "ak")
	users, err := repo.New[sample.User, int64](e.db, e.cache, &repo.Options{
		Name:   "users_restart",
		Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour},
		Filter: &bloom.Options{Capacity: 50_000, FalsePositiveRate: 0.001, Shards: 4,
			RebuildInterval: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = users.Close() })
	e.users = users // the Invalidator follows this repository
	byID, byEmail := users.Filter(), users.FilterBy("email")
	if byID == nil || byEmail == nil {
		t.Fatal("the repository has no filter by id or by email")
	}

	var rows published
	var next atomic.Int64 // the last id handed out
	const seeded = 300
	for range seeded {
		id := next.Add(1)
		e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?, ?, 'seed', now(), now())", id, email(id))
	}
	inv := e.invalidator(t, cdc.Options{StatusInterval: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	run(t, inv)
	e.sync(t, inv)
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	defer cancel()
	// The service warms its filters before it listens; after that, only
	// the filters' own automatic rebuilds may make them trusted again.
	if err := users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= seeded; id++ {
		rows.add(id)
	}

	var tally readTally
	var created, inserted, writeErrs atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 28))
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := rows.pick(r)
				rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
				if r.IntN(2) == 0 {
					_, err := users.Get(rctx, id)
					tally.record("Get", id, err, &tally.byID, &tally.wrongByID)
				} else {
					_, err := users.GetBy(rctx, "email", email(id))
					tally.record("GetBy(email)", id, err, &tally.byEmail, &tally.wrongByEmail)
				}
				rcancel()
			}
		})
	}
	// A writer through the repository, paced so that the machine keeps
	// room for the readers.
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			id := next.Add(1)
			u := sample.User{ID: id, Email: email(id), Name: "repo"}
			if err := users.Create(ctx, &u); err != nil {
				writeErrs.Add(1)
				continue
			}
			created.Add(1)
			rows.add(id)
		}
	})
	// A writer with plain SQL: its rows are read once the Invalidator
	// applied them.
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := next.Add(1)
			err := e.db.Exec("INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?, ?, 'sql', now(), now())", id, email(id)).Error
			if err != nil {
				writeErrs.Add(1)
				continue
			}
			lsn, err := inv.Position(ctx)
			if err == nil {
				err = inv.Wait(ctx, lsn)
			}
			if err != nil {
				writeErrs.Add(1)
				continue
			}
			inserted.Add(1)
			rows.add(id)
		}
	})
	stopLoad := func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoad()

	// waitUntil waits for cond, or for a wrong "not found": the test has
	// failed then, and says so below with the counts.
	waitUntil := func(what string, cond func() bool) bool {
		t.Helper()
		waitFor(t, what, func() bool { return tally.wrong() > 0 || cond() })
		return tally.wrong() == 0
	}
	readsPast := func(n int64) func() bool {
		from := tally.reads()
		return func() bool { return tally.reads() >= from+n }
	}
	filterStats := func() (bloom.Stats, bloom.Stats, error) {
		a, err := byID.Stats(ctx)
		if err != nil {
			return a, bloom.Stats{}, err
		}
		b, err := byEmail.Stats(ctx)
		return a, b, err
	}

	ok := waitUntil("reads before the first restart", readsPast(500))
	for restart := int64(1); ok && restart <= 2; restart++ {
		before := inv.Stats()
		srv.Kill()
		ok = waitUntil("the Invalidator to fail against the dead Redis", func() bool {
			return inv.Stats().Errors > before.Errors
		}) && waitUntil("reads during the outage", readsPast(200))
		if !ok {
			break
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Logf("restart %d: Redis is back, empty", restart)
		ok = waitUntil("both filters rebuilt and trusted again", func() bool {
			a, b, err := filterStats()
			return err == nil && a.UntrustedShards == 0 && b.UntrustedShards == 0 &&
				a.AutoRebuilds >= restart && b.AutoRebuilds >= restart
		}) && waitUntil("reads after the rebuild", readsPast(1000))
	}
	if tally.wrong() > 0 {
		// The test has failed: keep reading a moment, to tell how many.
		waitFor(t, "reads to count the wrong answers", readsPast(1000))
	}
	stopLoad()
	a, b, err := filterStats()
	t.Logf("%d reads by id, %d by email (%d failed otherwise); %d rows created through repo, %d with plain SQL (%d writes failed); "+
		"filter by id: %d automatic rebuilds, %d untrusted checks; by email: %d, %d (%v)",
		tally.byID.Load(), tally.byEmail.Load(), tally.errs.Load(), created.Load(), inserted.Load(), writeErrs.Load(),
		a.AutoRebuilds, a.UntrustedChecks, b.AutoRebuilds, b.UntrustedChecks, err)
	if n := tally.wrong(); n > 0 {
		t.Fatalf("%d wrong \"not found\" (%d by id, %d by email) of rows that existed before the read began; the first: %s",
			n, tally.wrongByID.Load(), tally.wrongByEmail.Load(), tally.first)
	}
	if err != nil {
		t.Fatal(err)
	}
	if a.UntrustedShards != 0 || b.UntrustedShards != 0 || a.AutoRebuilds < 2 || b.AutoRebuilds < 2 {
		t.Errorf("at the end: filter by id %+v, by email %+v; want both trusted, rebuilt automatically once per restart", a, b)
	}
	if a.UntrustedChecks == 0 || b.UntrustedChecks == 0 {
		t.Errorf("no check met an untrusted filter (by id %d, by email %d): the restarts tested nothing",
			a.UntrustedChecks, b.UntrustedChecks)
	}
	if created.Load() == 0 || inserted.Load() == 0 {
		t.Errorf("%d rows created through repo, %d with plain SQL: want both", created.Load(), inserted.Load())
	}
}
