package repo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

func listing(i int) sample.Listing {
	return sample.Listing{Address: fmt.Sprintf("%d Main St", i/4), Room: fmt.Sprintf("R%d", i%4), Rent: int64(1000 + i)}
}

// 8 goroutines insert the same 1,000 listings concurrently, each in its
// own order: exactly 1,000 rows and exactly 1,000 true results.
func TestInsertIfAbsent_concurrent(t *testing.T) {
	t.Parallel()
	// The scenario runs with the Bloom filter; without it the
	// "maybe" path runs for every key, on fewer listings to keep the
	// package's run short.
	for _, tc := range []struct {
		filter bool
		n      int
	}{{true, 1000}, {false, 250}} {
		t.Run(fmt.Sprintf("filter=%v", tc.filter), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			o := repo.Options{}
			if tc.filter {
				o.Filter = e.filterOptions(10_000)
				o.UniqueKey = []string{"address", "room"}
			}
			listings := e.listings(t, o)
			ctx := context.Background()
			n, workers := tc.n, 8
			var inserted atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					order := rand.New(rand.NewPCG(uint64(w), 1)).Perm(n)
					for _, i := range order {
						l := listing(i)
						ok, err := listings.InsertIfAbsent(ctx, &l)
						if err != nil {
							errs <- err
							return
						}
						if ok {
							inserted.Add(1)
							if l.ID == 0 {
								errs <- errors.New("inserted without an id")
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			var rows int64
			if err := e.db.Model(&sample.Listing{}).Count(&rows).Error; err != nil {
				t.Fatal(err)
			}
			if rows != int64(n) || inserted.Load() != int64(n) {
				t.Fatalf("%d rows, %d true results; want %d and %d", rows, inserted.Load(), n, n)
			}

			// Every listing is known now: a second pass (over a sample)
			// inserts nothing and, once the mappings are cached, a third
			// costs no SQL at all.
			for pass := 2; pass <= 3; pass++ {
				e.reset()
				for i := range min(n, 200) {
					l := listing(i)
					ok, err := listings.InsertIfAbsent(ctx, &l)
					if err != nil || ok {
						t.Fatalf("pass %d, listing %d: %v, %v", pass, i, ok, err)
					}
				}
				if ins := e.sql.Count("INSERT"); ins != 0 {
					t.Fatalf("pass %d ran %d INSERTs", pass, ins)
				}
			}
			if q := e.sql.Count(""); q != 0 {
				t.Fatalf("third pass ran %d SQL statements, want 0", q)
			}
		})
	}
}

// With the filter, a "definitely new" key costs the INSERT and no read.
func TestInsertIfAbsent_definitelyNew_noRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	listings := e.listings(t, repo.Options{Filter: e.filterOptions(1000), UniqueKey: []string{"Address", "room"}})
	ctx := context.Background()
	for i := range 20 {
		l := listing(i)
		e.reset()
		ok, err := listings.InsertIfAbsent(ctx, &l)
		if err != nil || !ok {
			t.Fatalf("listing %d: %v, %v", i, ok, err)
		}
		if all, ins := e.sql.Count(""), e.sql.Count("INSERT"); all != 1 || ins != 1 {
			t.Fatalf("listing %d: %d statements, %d INSERTs; want only the INSERT: %q", i, all, ins, e.sql.All())
		}
	}
	// The created listing reads through the cache, and its id passes the
	// primary-key filter.
	l := listing(3)
	if ok, err := listings.InsertIfAbsent(ctx, &l); ok || err != nil {
		t.Fatalf("duplicate: %v, %v", ok, err)
	}
	var first sample.Listing
	e.db.Where("address = ? AND room = ?", l.Address, l.Room).First(&first)
	got, err := listings.Get(ctx, first.ID)
	if err != nil || got.Rent != first.Rent {
		t.Fatalf("Get(%d) = %+v, %v", first.ID, got, err)
	}
}

// In a transaction the insert is the transaction's; a rollback leaves no
// row and a retry inserts it.
func TestInsertIfAbsent_transaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	listings := e.listings(t, repo.Options{Filter: e.filterOptions(1000), UniqueKey: []string{"Address", "room"}})
	ctx := context.Background()
	boom := errors.New("boom")
	l := listing(1)
	err := repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		ok, err := listings.WithTx(tx).InsertIfAbsent(ctx, &l)
		if err != nil || !ok {
			return fmt.Errorf("in tx: %v, %v", ok, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	l = listing(1)
	if ok, err := listings.InsertIfAbsent(ctx, &l); !ok || err != nil {
		t.Fatalf("after rollback: %v, %v", ok, err)
	}
}

func TestInsertIfAbsent_noUniqueKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type Note struct {
		ID   int64
		Text string
	}
	if err := e.db.AutoMigrate(&Note{}); err != nil {
		t.Fatal(err)
	}
	notes, err := repo.New[Note, int64](e.db, e.cache, &repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := notes.InsertIfAbsent(context.Background(), &Note{Text: "x"}); !errors.Is(err, repo.ErrNoUniqueKey) {
		t.Fatalf("InsertIfAbsent without a unique key: %v", err)
	}
	if _, err := notes.GetBy(context.Background(), "text", "x"); !errors.Is(err, repo.ErrNoUniqueKey) {
		t.Fatalf("GetBy on a non-unique column: %v", err)
	}
	if _, err := repo.New[Note, int64](e.db, e.cache, &repo.Options{UniqueKey: []string{"nope"}}); !errors.Is(err, repo.ErrInvalid) {
		t.Fatalf("UniqueKey of an unknown column: %v", err)
	}
}
