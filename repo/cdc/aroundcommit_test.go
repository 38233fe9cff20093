package cdc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// Reads around each COMMIT, at random: several processes (a Redis client,
// a Cache and a repository each) read every row back to back while
// writers change them with plain SQL, and after each write's COMMIT
// returned and Invalidator.Wait returned, every read that began
// afterwards must see the write. On a server without a synchronous
// standby the window between a commit's WAL flush and its visibility is
// short: the writers vary synchronous_commit, their backends run at low
// priority (nice 19, on a server started from PATH) beside the readers,
// and the check must find 0 old rows (with the visibility rule off it
// rarely finds one: logged, not asserted). On a server whose COMMITs wait
// for a synchronous standby that never answers, each write's wait is
// cancelled after a random delay (which makes it visible): the window is
// then milliseconds wide, 0 old rows with the rule, and old rows without.
func TestInvalidator_readsAroundCommit(t *testing.T) {
	t.Parallel()
	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		pg := testcontainers.LogicalPostgres(t)
		for _, rule := range []bool{true, false} {
			t.Run(ruleName(rule), func(t *testing.T) {
				old := readsAroundCommit(t, pg, rule, false)
				switch {
				case rule && old != 0:
					t.Errorf("%d reads saw a row older than a write whose COMMIT and Wait had returned before they began", old)
				case !rule:
					t.Logf("rule off, no synchronous standby: %d old rows (not asserted: the window is short)", old)
				}
			})
		}
	})
	t.Run("syncStandby", func(t *testing.T) {
		t.Parallel()
		pg := testcontainers.PrivateLogicalPostgres(t, "synchronous_standby_names=ghost", "synchronous_commit=local")
		for _, rule := range []bool{true, false} {
			t.Run(ruleName(rule), func(t *testing.T) {
				old := readsAroundCommit(t, pg, rule, true)
				switch {
				case rule && old != 0:
					t.Errorf("%d reads saw a row older than a write whose COMMIT and Wait had returned before they began", old)
				case !rule && old == 0:
					t.Error("rule off: no old row found: the test shows nothing")
				}
			})
		}
	})
}

func ruleName(rule bool) string {
	if rule {
		return "rule"
	}
	return "noRule"
}

// Sizes of readsAroundCommit.
const (
	aroundRows      = 6
	aroundProcs     = 3
	aroundReaders   = 2 // per process
	aroundWriters   = 3 // each owns aroundRows/aroundWriters rows
	aroundWritesPer = 25
)

// aroundRow is what the writers acknowledged on one row: versions whose
// COMMIT and Invalidator.Wait had returned, and when.
type aroundRow struct {
	mu   sync.Mutex
	acks []aroundAck
}

type aroundAck struct {
	version int
	at      time.Time
}

// newest returns the highest version acknowledged before t (0: the
// inserted row).
func (r *aroundRow) newest(t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := 0
	for _, a := range r.acks {
		if a.at.Before(t) {
			v = max(v, a.version)
		}
	}
	return v
}

// readsAroundCommit runs the readers and writers on a database of pg and
// returns the number of reads that returned a row older than a write
// acknowledged before they began. With syncStandby, pg's COMMITs wait
// for a standby that never answers, and each write's wait is cancelled.
func readsAroundCommit(t *testing.T, pg *testcontainers.PostgresDB, rule, syncStandby bool) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	rn := testcontainers.Redis(t)
	e := newEnvOn(t, pg, rn.Client, rn.Namespace)
	e.exec(t, "DELETE FROM users")
	for id := 1; id <= aroundRows; id++ {
		e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?, ?, 'v0', now(), now())",
			id, fmt.Sprintf("u%d@example.com", id))
	}
	inv := e.invalidator(t, cdc.Options{})
	if !rule {
		cdc.IgnoreVisibility(inv)
	}
	run(t, inv)
	e.sync(t, inv)

	// The processes: a client, a Cache and a repository each, on the
	// namespace the Invalidator writes.
	procs := make([]*repo.Repository[sample.User, int64], aroundProcs)
	for i := range procs {
		cache, err := cacheaside.New(rn.NewClient(t), &cacheaside.Options{Namespace: rn.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cache.Close() })
		procs[i], err = repo.New[sample.User, int64](pg.DB, cache, &repo.Options{Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = procs[i].Close() })
	}

	rows := make([]aroundRow, aroundRows+1) // by id
	var old, reads atomic.Int64
	var firstOld sync.Once
	done := make(chan struct{})
	var readers sync.WaitGroup
	for _, p := range procs {
		for g := 0; g < aroundReaders; g++ {
			readers.Go(func() {
				for id := int64(1); ; id = id%aroundRows + 1 {
					select {
					case <-done:
						return
					default:
					}
					start := time.Now()
					need := rows[id].newest(start)
					u, err := p.Get(ctx, id)
					if err != nil {
						t.Errorf("Get(%d): %v", id, err)
						return
					}
					reads.Add(1)
					got, err := strconv.Atoi(strings.TrimPrefix(u.Name, "v"))
					if err != nil {
						t.Errorf("Get(%d): name %q", id, u.Name)
						return
					}
					if got < need {
						old.Add(1)
						firstOld.Do(func() { t.Logf("row %d: read v%d, began after v%d was acknowledged", id, got, need) })
					}
				}
			})
		}
	}

	var writers sync.WaitGroup
	for w := 0; w < aroundWriters; w++ {
		writers.Go(func() {
			if err := aroundWrite(ctx, e, inv, rows, w, syncStandby, pg.Source == testcontainers.SourceBinary); err != nil {
				t.Error(err)
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	t.Logf("%d reads, %d writes, %d old (stats %+v)", reads.Load(), aroundWriters*aroundWritesPer, old.Load(), inv.Stats())
	return old.Load()
}

// synchronousCommits are the settings a plain server's writes vary.
var synchronousCommits = []string{"on", "local", "off", "remote_write"}

// lowPriority sets the nice value of backend pid, a process of a server
// this test binary started, to 19, best effort: on a busy machine the
// backend is then often descheduled between its commit's WAL flush and
// the end of the commit, the window the visibility rule closes.
func lowPriority(pid int32) {
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err != nil || !strings.HasPrefix(string(comm), "postgres") {
		return
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, int(pid), 19)
}

// aroundWrite runs writer w: aroundWritesPer UPDATEs of its rows (ids w+1,
// w+1+aroundWriters, …) on a connection of its own (its backend at low
// priority when local: pg's server runs on this machine), each
// acknowledged once its COMMIT and inv.Wait returned.
func aroundWrite(ctx context.Context, e *env, inv *cdc.Invalidator, rows []aroundRow, w int, syncStandby, local bool) error {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	admin, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	var pid int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return err
	}
	if local {
		lowPriority(pid)
	}
	r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	versions := map[int64]int{}
	for i := 0; i < aroundWritesPer; i++ {
		id := int64(w + 1 + aroundWriters*r.IntN(aroundRows/aroundWriters))
		versions[id]++
		v := versions[id]
		sc := synchronousCommits[r.IntN(len(synchronousCommits))]
		if syncStandby {
			sc = "on" // waits for the standby that never answers
		}
		committed := make(chan error, 1)
		go func() {
			_, err := conn.Exec(ctx, fmt.Sprintf(`BEGIN; SET LOCAL synchronous_commit = %s;
				UPDATE users SET name = 'v%d' WHERE id = %d; COMMIT`, sc, v, id))
			committed <- err
		}()
		if syncStandby {
			if err := cancelSyncWait(ctx, admin, pid, time.Duration(r.IntN(30))*time.Millisecond); err != nil {
				return err
			}
		}
		if err := <-committed; err != nil && !syncStandby {
			return fmt.Errorf("write v%d of row %d: %w", v, id, err)
		}
		var lsn string
		if err := admin.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
			return err
		}
		var pos cdc.LSN
		if err := pos.Scan(lsn); err != nil {
			return err
		}
		if err := inv.Wait(ctx, pos); err != nil {
			return fmt.Errorf("wait for %s: %w", lsn, err)
		}
		rows[id].mu.Lock()
		rows[id].acks = append(rows[id].acks, aroundAck{v, time.Now()})
		rows[id].mu.Unlock()
	}
	return nil
}

// cancelSyncWait waits until backend pid waits for the synchronous
// standby, lets delay pass (reads run in the window meanwhile) and
// cancels the wait, which makes its commit visible.
func cancelSyncWait(ctx context.Context, admin *pgx.Conn, pid int32, delay time.Duration) error {
	deadline := time.Now().Add(patience)
	for {
		var waiting bool
		err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep')", pid).Scan(&waiting)
		if err != nil {
			return err
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("backend %d never waited for the standby", pid)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(delay)
	_, err := admin.Exec(ctx, "SELECT pg_cancel_backend($1)", pid)
	return err
}
