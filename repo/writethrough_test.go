package repo_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
)

// wtRow is a row whose seq a trigger sets on every write: the order in
// which the writes of a row committed.
type wtRow struct {
	ID   int64 `gorm:"primaryKey;autoIncrement:false"`
	Name string
	Seq  int64
	At   time.Time
}

func (wtRow) TableName() string { return "wt_rows" }

// wtRows migrates wt_rows, with its trigger, and returns a repository on
// cache that writes through.
func (e *env) wtRows(t *testing.T, cache *cacheaside.Cache) *repo.Repository[wtRow, int64] {
	t.Helper()
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS wt_rows (id bigint PRIMARY KEY, name text NOT NULL, seq bigint NOT NULL DEFAULT 0, at timestamptz NOT NULL)`,
		`CREATE SEQUENCE IF NOT EXISTS wt_rows_seq`,
		`CREATE OR REPLACE FUNCTION wt_rows_seq() RETURNS trigger AS $$ BEGIN NEW.seq := nextval('wt_rows_seq'); RETURN NEW; END $$ LANGUAGE plpgsql`,
		`CREATE OR REPLACE TRIGGER wt_rows_seq BEFORE INSERT OR UPDATE ON wt_rows FOR EACH ROW EXECUTE FUNCTION wt_rows_seq()`,
	} {
		if err := e.db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	r, err := repo.New[wtRow, int64](e.db, cache, &repo.Options{WriteThrough: true, Ownership: repo.OwnershipShared,
		Policy: cacheaside.Policy{TTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// With WriteThrough, Create, Update and Put leave the row as stored in
// the cache: the next Get makes no SELECT and returns what the table
// holds, the trigger's seq and the database's microseconds included.
func TestWriteThrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.wtRows(t, e.cache)
	ctx := context.Background()
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC) // finer than PostgreSQL keeps
	check := func(op string, id int64) {
		t.Helper()
		e.reset()
		got, err := r.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if n := e.sql.Count("SELECT"); n != 0 {
			t.Errorf("Get after %s ran %d SELECTs, want 0", op, n)
		}
		var want wtRow
		if err := e.db.First(&want, id).Error; err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || got.Seq != want.Seq || !got.At.Equal(want.At) {
			t.Errorf("Get after %s = %+v, the table holds %+v", op, got, want)
		}
	}
	v := wtRow{ID: 1, Name: "created", At: at}
	if err := r.Create(ctx, &v); err != nil {
		t.Fatal(err)
	}
	if v.Seq == 0 || v.At.Nanosecond()%1000 != 0 {
		t.Errorf("after Create v = %+v, want the row as stored (RETURNING)", v)
	}
	check("Create", 1)
	v.Name = "updated"
	if err := r.Update(ctx, &v); err != nil {
		t.Fatal(err)
	}
	check("Update", 1)
	if err := r.Put(ctx, &wtRow{ID: 1, Name: "put", At: at}); err != nil {
		t.Fatal(err)
	}
	check("Put", 1)
	if err := r.Put(ctx, &wtRow{ID: 2, Name: "put new", At: at}); err != nil {
		t.Fatal(err)
	}
	check("Put of a new row", 2)

	// Without WriteThrough, the same Update invalidates: the check can fail.
	plain, err := repo.New[wtRow, int64](e.db, e.cache, &repo.Options{Ownership: repo.OwnershipShared})
	if err != nil {
		t.Fatal(err)
	}
	v.Name = "plain"
	if err := plain.Update(ctx, &v); err != nil {
		t.Fatal(err)
	}
	e.reset()
	if _, err := r.Get(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := e.sql.Count("SELECT"); n != 1 {
		t.Errorf("Get after an Update without WriteThrough ran %d SELECTs, want 1", n)
	}
}

// Three processes write the same rows at once, through, with their
// upkeeps delayed at random so that they often run out of commit order;
// readers Get the rows through random processes. No read may return a
// row older than a write completed before the read began (by the
// trigger's seq, the commit order). The writes also move the rows
// between the lists of a patchable query that the readers list too, so
// that each write reads its row's version and the lists' generations
// before its statement together (cacheaside's ReadBefore) and its upkeep
// both stores the row and patches the lists.
func TestWriteThrough_history(t *testing.T) {
	if n := writeThroughHistory(t); n != 0 {
		t.Fatalf("%d stale reads", n)
	}
}

// Without the version compare, a late upkeep stores its older row over a
// newer one's: the history check can fail. (Not parallel: the switch is
// process-wide.)
func TestWriteThrough_history_failsWithoutCompare(t *testing.T) {
	repo.SetFillCompareOff(true)
	defer repo.SetFillCompareOff(false)
	if n := writeThroughHistory(t); n == 0 {
		t.Fatal("no stale read without the compare: the history test cannot fail")
	}
}

func writeThroughHistory(t *testing.T) (stale int) {
	const (
		procs, writers, readers = 3, 6, 3
		rows, opsEach           = 2, 50
	)
	e := newEnv(t)
	ctx := context.Background()
	var rs []*repo.Repository[wtRow, int64]
	var qs []*repo.Query[wtRow, int64]
	for i := range procs {
		cache := e.cache
		if i > 0 {
			cache = newCacheOn(t, e.rdb, e.ns)
		}
		r := e.wtRows(t, cache)
		q, err := repo.NewQuery(r, repo.QueryOf{Name: "by_name", Where: []string{"name"}, Order: "id"})
		if err != nil {
			t.Fatal(err)
		}
		rs, qs = append(rs, r), append(qs, q)
	}
	names := []string{"a", "b"}
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for id := int64(1); id <= rows; id++ {
		if err := rs[0].Create(ctx, &wtRow{ID: id, Name: names[0], At: at}); err != nil {
			t.Fatal(err)
		}
	}
	repo.SetBeforeUpkeep(t, func() {
		if rand.IntN(2) == 0 {
			time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond)
		}
	})
	type done struct {
		id, seq int64
		end     time.Time
	}
	var mu sync.Mutex
	var writes []done
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	for range writers {
		wg.Go(func() {
			for range opsEach {
				v := wtRow{ID: 1 + rand.Int64N(rows), Name: names[rand.IntN(2)], At: at}
				if err := rs[rand.IntN(procs)].Update(ctx, &v); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				writes = append(writes, done{v.ID, v.Seq, time.Now()})
				mu.Unlock()
			}
		})
	}
	type read struct {
		id, seq int64
		start   time.Time
	}
	var reads []read
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for range readers {
		rwg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if rand.IntN(4) == 0 { // keep the lists cached, for the writes to patch
					if _, _, err := qs[rand.IntN(procs)].List(ctx, repo.Page{Size: 10}, names[rand.IntN(2)]); err != nil {
						errs <- err
						return
					}
					continue
				}
				id := 1 + rand.Int64N(rows)
				start := time.Now()
				v, err := rs[rand.IntN(procs)].Get(ctx, id)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				reads = append(reads, read{id, v.Seq, start})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, r := range reads {
		for _, w := range writes {
			if w.id == r.id && w.end.Before(r.start) && w.seq > r.seq {
				stale++
				if stale <= 3 {
					t.Logf("read of row %d returned seq %d, but the write of seq %d completed before the read began", r.id, r.seq, w.seq)
				}
				break
			}
		}
	}
	var filled uint64
	for _, r := range rs {
		filled += r.Stats().Hits
	}
	var patches int64
	for _, q := range qs {
		patches += q.Stats().Patches
	}
	t.Logf("%d writes, %d reads, %d stale, %d hits, %d lists patched", len(writes), len(reads), stale, filled, patches)
	if len(reads) < 50 {
		t.Fatalf("only %d reads", len(reads))
	}
	if patches == 0 {
		t.Fatal("no write patched a list: the history did not combine write-through and lists")
	}
	return stale
}

// Redis gone: a write that writes through is done, says that its upkeep
// failed, and the next read loads the row as written.
func TestWriteThrough_deadRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.wtRows(t, e.cache) // the table
	srv := testcontainersRedisServer(t)
	r, err := repo.New[wtRow, int64](e.db, newCacheOn(t, srv.client, e.ns),
		&repo.Options{WriteThrough: true, AfterCommitErrors: true, Ownership: repo.OwnershipShared})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v := wtRow{ID: 7, Name: "before", At: time.Now()}
	if err := r.Create(ctx, &v); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	v.Name = "after"
	if err := r.Update(ctx, &v); !errors.Is(err, repo.ErrAfterCommit) {
		t.Fatalf("Update with Redis down = %v, want ErrAfterCommit", err)
	}
	if got, err := r.Get(ctx, 7); err != nil || got.Name != "after" {
		t.Fatalf("Get with Redis down = %+v, %v; want the row as written", got, err)
	}
}
