package benchmarks

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/testcontainers"
)

// The plain DELs of a variant go through one client: a client per DEL
// leaked a pool each until the Env closed, and a default-size run reached
// Redis's maxclients in its last plain_del variant, whose DELs then failed
// (its writes never served, invalidation_max_ms far past Local.TTL). And
// broadcast/plain_del, whose readers see a DEL only when their local
// entries expire, waits for that: no write is left unserved at the end
// (the run used to end 200ms after the last write, every write unserved
// here, their delays cut short).
func TestLocalVariant_plainDel(t *testing.T) {
	t.Parallel()
	pg := testcontainers.Postgres(t)
	rd := testcontainers.Redis(t)
	ctx := context.Background()
	env, err := Open(ctx, Config{RedisAddr: rd.Addrs[0], PostgresDSN: pg.DSN, DBPool: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	p := LocalInvalidationParams{Load: Load{Instances: 2, Goroutines: 1}, Keys: 4, Writes: 40,
		WriteEvery: 5 * time.Millisecond, ReadEvery: time.Millisecond, LocalTTL: time.Second}
	for _, v := range localVariants() {
		if !v.plain || v.mode != cacheaside.LocalBroadcast {
			continue
		}
		before := clientCount(env)
		st, err := driveLocalVariant(ctx, env, p, v)
		if err != nil {
			t.Fatal(err)
		}
		// The writer's, each reader's and the outside program's.
		if got, want := clientCount(env)-before, p.Instances+2; got != want {
			t.Errorf("%s: %d Redis clients made for %d writes, want %d", v.name, got, p.Writes, want)
		}
		if st.errors != 0 || st.unseen != 0 {
			t.Errorf("%s: %d errors, %d of %d writes unserved at the end", v.name, st.errors, st.unseen, len(st.delays))
		}
	}
}

func clientCount(env *Env) int {
	env.mu.Lock()
	defer env.mu.Unlock()
	return len(env.clients)
}

// The online bookkeeping of staleDrive, on times made up: a write is
// served in a process by the read begun first after it returned with its
// version or a newer one (even one that ends after a later-begun read), a
// write some process never serves counts until the run's end, and a read
// that answers an older version long after the write returned (a broken
// invalidation: an old value served again) counts after the window.
func TestKeyLog(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	logs := make([]keyLog, 1)
	l := &logs[0]
	var pending atomic.Int64
	clock := int64(0)
	since := func() int64 { return clock }
	read := func(proc int, begin, end, ver int64) int64 {
		age, _ := l.read(proc, readSpan{ms(begin), ms(end)}, ver, &pending)
		return age
	}
	if age := read(0, 0, 1, 0); age != -1 { // before any write
		t.Errorf("read before the first write: age %d, want -1", age)
	}
	clock = ms(100)
	l.wrote(1, 2, since, &pending)
	if got := pending.Load(); got != 2 {
		t.Fatalf("pending = %d after a write seen by 2 processes, want 2", got)
	}
	steps := []struct {
		proc                 int
		begin, end, ver, age int64 // age in ms, -1: not stale
	}{
		{0, 50, 120, 0, -1},  // began before the write
		{0, 101, 103, 0, 1},  // stale, 1ms after the write
		{0, 105, 106, 1, -1}, // serves it in process 0...
		{0, 104, 108, 1, -1}, // ...or this one, begun earlier
		{1, 103, 107, 1, -1}, // and in process 1
	}
	for _, s := range steps {
		age := read(s.proc, s.begin, s.end, s.ver)
		if want := s.age; (want < 0 && age != -1) || (want >= 0 && age != ms(want)) {
			t.Errorf("read %+v: age %d ns", s, age)
		}
	}
	if got := pending.Load(); got != 0 {
		t.Errorf("pending = %d once both processes served the write, want 0", got)
	}
	clock = ms(200)
	l.wrote(2, 2, since, &pending)
	read(0, 201, 202, 2) // only process 0 serves version 2
	// Process 1 answers version 0 again, 300ms after version 1 returned.
	if age := read(1, 400, 401, 0); age != ms(300) {
		t.Errorf("old value served again: age %d, want %d", age, ms(300))
	}
	if got := pending.Load(); got != 1 {
		t.Errorf("pending = %d, want 1 (version 2 in process 1)", got)
	}
	st := analyseStaleAges(logs, regressions(ms(1), ms(300)), ms(500), false, 0)
	want := []time.Duration{8 * time.Millisecond, 300 * time.Millisecond} // 108-100; 500-200, unserved
	if !slices.Equal(st.delays, want) || st.unseen != 1 {
		t.Errorf("delays %v, %d unseen; want %v, 1", st.delays, st.unseen, want)
	}
	if st.stale != 2 || st.after != 0 {
		t.Errorf("%d stale, %d after the window; want 2, 0 (the window is the longest delay + 10ms: 310ms)", st.stale, st.after)
	}
	// Had version 2 been served in time, the window would be 18ms, and
	// the old value served 300ms after the write would count after it.
	l.writes[1].first[1] = readSpan{ms(203), ms(204)}
	st = analyseStaleAges(logs, regressions(ms(1), ms(300)), ms(500), false, 0)
	if st.unseen != 0 || st.stale != 2 || st.after != 1 {
		t.Errorf("%d unseen, %d stale, %d after the window; want 0, 2, 1", st.unseen, st.stale, st.after)
	}
}

// staleDrive end to end over an in-memory source: readers that always
// answer the truth are never stale and serve every write; a process stuck
// on an old version of one key leaves every write of it unserved, counted
// (with its delay until the run's end), never dropped.
func TestStaleDrive(t *testing.T) {
	const keys, writes = 4, 40
	for _, stuck := range []bool{false, true} {
		var truth [keys]atomic.Int64
		d := staleDrive{procs: 2, goroutines: 2, keys: keys, writes: writes, writeEvery: time.Millisecond, tail: 100 * time.Millisecond,
			read: func(_ context.Context, proc, k int) (int64, error) {
				if stuck && proc == 1 && k == 0 {
					return 0, nil
				}
				return truth[k].Load(), nil
			},
			write: func(_ context.Context, _, k int) (int64, error) { return truth[k].Add(1), nil },
		}
		st := d.run(context.Background())
		wantUnseen, wantStale := 0, false
		if stuck {
			wantUnseen, wantStale = writes/keys, true
		}
		if len(st.delays) != writes || st.unseen != wantUnseen || (st.stale > 0) != wantStale || st.errors != 0 || st.requests == 0 {
			t.Errorf("stuck %v: %d delays, %d unseen, %d stale, %d errors, %d reads; want %d, %d, stale %v, 0, some",
				stuck, len(st.delays), st.unseen, st.stale, st.errors, st.requests, writes, wantUnseen, wantStale)
		}
		if stuck && quantile(st.delays, 1) < d.tail {
			t.Errorf("stuck: longest delay %v, want at least the tail (%v): an unserved write counts until the end", quantile(st.delays, 1), d.tail)
		}
	}
}

// regressions are one reader goroutine's stale reads of the given ages,
// each a regression (its process had served the write it missed).
func regressions(ages ...int64) []staleAges {
	var s staleAges
	for _, a := range ages {
		s.add(time.Duration(a), 0, true)
	}
	return []staleAges{s}
}
