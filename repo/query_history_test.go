package repo_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/repo"
)

// TestQuery_history: three "processes" (repositories on caches of their
// own, one Redis namespace and one database) write rows through repo at
// random (category moves, reorders, price changes, inserts, deletes, some
// in transactions) while readers list categories whole, in keyset pages
// of random size, or read one page at a small offset, through random
// processes. Every list read must reflect every write that completed
// before the read began: the rows no write touched during the read are
// exactly those of the table as of the read's start, in the declared
// order (for an offset page: the last of them, all but at most offset).
func TestQuery_history(t *testing.T) {
	t.Parallel()
	n, patches := queryHistory(t)
	if n != 0 {
		t.Fatalf("%d stale list reads", n)
	}
	if patches == 0 {
		t.Fatal("no write patched a list: the history did not test patches")
	}
}

// Without invalidation the same history serves stale lists: the checker
// can fail. (Not parallel: the switch is process-wide.)
func TestQuery_history_failsWithoutInvalidation(t *testing.T) {
	repo.SetListBumpsOff(true)
	defer repo.SetListBumpsOff(false)
	if n, _ := queryHistory(t); n == 0 {
		t.Fatal("no stale list read without invalidation: the history test cannot fail")
	}
}

// histRow is a row of the model: what the table holds once every
// completed write is applied.
type histRow struct {
	cat     int64
	created time.Time
	live    bool
}

// listHistory is the model of the completed writes and the writes in flight.
type listHistory struct {
	mu        sync.Mutex
	rows      map[int64]histRow
	started   map[int64]int // writes begun, per row
	completed map[int64]int // writes completed, per row
}

func (h *listHistory) begin(id int64) {
	h.mu.Lock()
	h.started[id]++
	h.mu.Unlock()
}

func (h *listHistory) end(id int64, r histRow, applied bool) {
	h.mu.Lock()
	if applied {
		h.rows[id] = r
	}
	h.completed[id]++
	h.mu.Unlock()
}

// queryHistory runs the history and returns the number of stale reads
// and of lists patched in place by writes.
func queryHistory(t *testing.T) (stale int, patches int64) {
	const (
		procs    = 3
		writers  = 3
		readers  = 3
		cats     = 4
		perOwner = 8 // rows per writer
		opsEach  = 60
		minReads = 30
	)
	e := newEnv(t)
	ctx := context.Background()
	var rs []*repo.Repository[qitem, int64]
	var qs []*repo.Query[qitem, int64]
	for i := range procs {
		cache := e.cache
		if i > 0 {
			cache = newCacheOn(t, e.rdb, e.ns)
		}
		r, q := e.qitems(t, cache)
		rs, qs = append(rs, r), append(qs, q)
	}
	h := &listHistory{rows: map[int64]histRow{}, started: map[int64]int{}, completed: map[int64]int{}}
	// Each writer owns its rows: the model orders a row's writes by their
	// return, the table by their COMMIT (concurrent writers of one row:
	// TestGuard_concurrentMoveBack).
	for w := range writers {
		for i := range perOwner {
			id := int64(w*perOwner + i + 1)
			r := histRow{cat: int64(i % cats), created: t0.Add(time.Duration(rand.IntN(5)) * time.Minute), live: i%4 != 3}
			if r.live {
				if err := rs[0].Create(ctx, &qitem{ID: id, CategoryID: r.cat, CreatedAt: r.created, Price: 1}); err != nil {
					t.Fatal(err)
				}
			}
			h.rows[id] = r
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for range opsEach {
				id := int64(w*perOwner + rand.IntN(perOwner) + 1)
				h.mu.Lock()
				cur := h.rows[id]
				h.mu.Unlock()
				next := cur
				r := rs[rand.IntN(procs)]
				it := qitem{ID: id, CategoryID: cur.cat, CreatedAt: cur.created, Price: rand.Int64N(100)}
				h.begin(id)
				var err error
				switch op := rand.IntN(6); {
				case !cur.live:
					next = histRow{cat: rand.Int64N(cats), created: t0.Add(time.Duration(rand.IntN(5)) * time.Minute), live: true}
					it.CategoryID, it.CreatedAt = next.cat, next.created
					if op < 3 {
						err = r.Create(ctx, &it)
					} else {
						err = r.CreateMany(ctx, []qitem{it})
					}
				case op == 5: // this row and another of the writer's, in one PutMany
					id2 := int64(w*perOwner + (int(id-1)%perOwner+1+rand.IntN(perOwner-1))%perOwner + 1)
					h.mu.Lock()
					cur2 := h.rows[id2]
					h.mu.Unlock()
					next.cat = rand.Int64N(cats)
					next2 := histRow{cat: rand.Int64N(cats), created: cur2.created, live: true}
					if !cur2.live { // inserted: at the time given
						next2.created = t0.Add(time.Duration(rand.IntN(5)) * time.Minute)
					}
					// The times given to live rows are not what the rows keep.
					it.CategoryID, it.CreatedAt = next.cat, t0.Add(time.Duration(rand.IntN(5))*time.Minute)
					it2 := qitem{ID: id2, CategoryID: next2.cat, CreatedAt: t0.Add(time.Duration(rand.IntN(5)) * time.Minute), Price: 1}
					if !cur2.live {
						it2.CreatedAt = next2.created
					}
					h.begin(id2)
					err = r.PutMany(ctx, []qitem{it, it2}) // an upsert keeps created_at
					h.end(id2, next2, err == nil)
				case op == 0:
					next.live = false
					err = r.Delete(ctx, id)
				case op == 1:
					next.created = t0.Add(time.Duration(rand.IntN(5)) * time.Minute)
					it.CreatedAt = next.created
					err = r.Update(ctx, &it)
				case op == 2:
					_, err = r.Modify(ctx, id, map[string]any{"price": rand.IntN(100)})
				case op == 3: // a move in a transaction
					next.cat = rand.Int64N(cats)
					it.CategoryID = next.cat
					err = repo.Transaction(ctx, e.db, func(tx *repo.Tx) error { return r.WithTx(tx).Update(ctx, &it) })
				default:
					next.cat = rand.Int64N(cats)
					_, err = r.Modify(ctx, id, map[string]any{"category_id": next.cat})
				}
				h.end(id, next, err == nil)
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var mu sync.Mutex
	reads := 0
	var rwg sync.WaitGroup
	for range readers {
		rwg.Go(func() {
			for {
				select {
				case <-done:
					// Enough reads however slow the machine: reads after the
					// writes are judged the same way.
					mu.Lock()
					enough := reads >= minReads
					mu.Unlock()
					if enough {
						return
					}
				default:
				}
				cat := rand.Int64N(cats)
				q := qs[rand.IntN(procs)]
				h.mu.Lock()
				rows := copyMap(h.rows)
				completed := copyMap(h.completed)
				h.mu.Unlock()
				var got []int64
				cursor := ""
				size := []int{2, 3, 100}[rand.IntN(3)]
				// An offset read is one page of the list from offset on.
				offset := 0
				if rand.IntN(3) == 0 {
					size, offset = 100, 1+rand.IntN(3)
				}
				for {
					page, next, err := q.List(ctx, repo.Page{Size: size, After: cursor, Offset: offset}, cat)
					if err != nil {
						errs <- err
						return
					}
					for _, r := range page {
						got = append(got, r.ID)
					}
					if next == "" || offset > 0 {
						break
					}
					cursor = next
				}
				h.mu.Lock()
				quiet := func(id int64) bool { return h.started[id] == completed[id] }
				var want []int64
				for id, r := range rows {
					if r.live && r.cat == cat && quiet(id) {
						want = append(want, id)
					}
				}
				got = slices.DeleteFunc(got, func(id int64) bool { return !quiet(id) })
				h.mu.Unlock()
				sort.Slice(want, func(i, j int) bool {
					a, b := rows[want[i]], rows[want[j]]
					if !a.created.Equal(b.created) {
						return a.created.After(b.created)
					}
					return want[i] < want[j]
				})
				if offset > 0 {
					// The quiet rows stay put during the read: those of the
					// page are the list's last ones, and the offset skipped
					// at most offset of them.
					if len(got) >= len(want)-offset && len(got) <= len(want) {
						want = want[len(want)-len(got):]
					}
				}
				mu.Lock()
				reads++
				if !slices.Equal(got, want) {
					stale++
					if stale <= 3 {
						t.Logf("stale list %d: got %v, want %v", cat, got, want)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	rwg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, repo.ErrNotFound) {
			t.Fatal(err)
		}
	}
	for _, q := range qs {
		patches += q.Stats().Patches
	}
	t.Logf("%d list reads, %d stale, %d lists patched by writes", reads, stale, patches)
	if reads < minReads {
		t.Fatalf("only %d list reads", reads)
	}
	return stale, patches
}

func copyMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
