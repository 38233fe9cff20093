package configstore_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/asidekit/asidekit/repo/configstore"
)

// A randomized history across two processes: one writer per key (Sets
// and Deletes through either process, so each key's writes are ordered),
// the hash deleted after a write whenever a read has succeeded since the
// last deletion (as an eviction would; more often and a Get could see the
// hash vanish more than it retries), every third time rebuilt by
// Reconcile, and readers in both processes all along.
// Every read must return the state of a write no older than the last one
// of its key completed before the read began, and no newer than the last
// one begun before it returned.
func TestStore_history_readsNeverOlderThanCompletedWrites(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	procs := []*configstore.Store{
		b.store(t, b.r.NewClient(t), b.openDB(t), nil),
		b.store(t, b.r.NewClient(t), b.openDB(t), nil),
	}
	const keys, writesPerKey = 4, 40
	type keyHistory struct {
		deletes          [writesPerKey + 1]bool // write j (from 1) is a Delete
		begun, completed atomic.Int64           // the last write begun, completed
	}
	hist := make([]*keyHistory, keys)
	for k := range hist {
		hist[k] = new(keyHistory)
		for j := 1; j <= writesPerKey; j++ {
			hist[k].deletes[j] = rand.IntN(3) == 0
		}
	}
	written, readOK := make(chan struct{}, 1), make(chan struct{}, 1)
	var writers sync.WaitGroup
	for k, h := range hist {
		writers.Go(func() {
			key := "k" + strconv.Itoa(k)
			for j := 1; j <= writesPerKey; j++ {
				s := procs[rand.IntN(len(procs))]
				h.begun.Store(int64(j))
				var err error
				if h.deletes[j] {
					err = s.Delete(ctx, key)
				} else {
					err = s.Set(ctx, key, strconv.Itoa(j))
				}
				if err != nil {
					t.Error(err)
					return
				}
				h.completed.Store(int64(j))
				select {
				case written <- struct{}{}:
				default:
				}
			}
		})
	}
	stop := make(chan struct{})
	var others sync.WaitGroup
	others.Go(func() { // the evictor
		for n := 0; ; n++ {
			for _, ch := range []chan struct{}{readOK, written} {
				select {
				case <-stop:
					return
				case <-ch:
				}
			}
			if err := b.r.Client.Del(ctx, procs[0].Key()).Err(); err != nil {
				t.Error(err)
				return
			}
			if n%3 == 0 {
				if _, err := procs[1].Reconcile(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	var reads, checked atomic.Int64
	for _, s := range procs {
		for range 2 {
			others.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					k := rand.IntN(keys)
					h := hist[k]
					floor := h.completed.Load()
					v, err := s.Get(ctx, "k"+strconv.Itoa(k))
					ceiling := h.begun.Load()
					reads.Add(1)
					if msg := judge(h.deletes[:], floor, ceiling, v, err); msg != "" {
						t.Errorf("read of k%d (writes %d..%d completed/begun): %s", k, floor, ceiling, msg)
						return
					}
					checked.Add(1)
					select {
					case readOK <- struct{}{}:
					default:
					}
				}
			})
		}
	}
	writers.Wait()
	close(stop)
	others.Wait()
	if checked.Load() < int64(keys) {
		t.Fatalf("only %d reads checked", checked.Load())
	}
	t.Logf("%d reads; stats %+v, %+v", reads.Load(), procs[0].Stats(), procs[1].Stats())
}

// judge says what is wrong with a read that returned v, err, when the
// writes of its key completed before it began go up to floor and those
// begun before it returned up to ceiling (deletes[j]: write j is a
// Delete; 0 is the state before any write, no value); "" if nothing.
func judge(deletes []bool, floor, ceiling int64, v string, err error) string {
	switch {
	case errors.Is(err, configstore.ErrNotFound):
		for j := floor; j <= ceiling; j++ {
			if j == 0 || deletes[j] {
				return ""
			}
		}
		return "not found, but no write in that range deletes it"
	case err != nil:
		return err.Error()
	}
	j, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil || j < floor || j > ceiling || deletes[j] {
		return "returned the value of write " + v
	}
	return ""
}
