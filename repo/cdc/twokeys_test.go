package cdc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// member has two unique columns besides its primary key.
type member struct {
	ID     int64  `gorm:"primaryKey"`
	Email  string `gorm:"size:320;not null;uniqueIndex"`
	Handle string `gorm:"size:64;not null;uniqueIndex"`
	Name   string `gorm:"size:200;not null"`
}

// A row inserted, updated and deleted with plain SQL on a table with two
// unique keys and Bloom filters reads right by id and by both unique
// values: every filter gets the new values, every mapping is dropped.
func TestInvalidator_twoUniqueKeys(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&member{}); err != nil {
		t.Fatal(err)
	}
	for _, uk := range [][]string{nil, {"email"}, {"handle"}} {
		name := "members"
		if uk != nil {
			name += "_" + uk[0]
		}
		t.Run(name, func(t *testing.T) {
			e.exec(t, "TRUNCATE members")
			members, err := repo.New[member, int64](e.db, e.cache, repo.Options{
				Name:      name,
				UniqueKey: uk,
				Policy:    cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour},
				Filter:    &bloom.Options{Namespace: e.ns, Capacity: 10_000, FalsePositiveRate: 0.001},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := members.WarmFilter(ctx); err != nil {
				t.Fatal(err)
			}
			inv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot + "_" + name})
			if err != nil {
				t.Fatal(err)
			}
			if err := inv.Register(members); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inv.Drop(context.Background()) })
			stop := run(t, inv)
			defer stop()
			e.sync(t, inv)

			// Absences cached by id and by both unique values.
			if _, err := members.Get(ctx, 1); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("Get(1) err = %v, want ErrNotFound", err)
			}
			for _, by := range [][2]string{{"email", "ada@example.com"}, {"handle", "ada"}} {
				if _, err := members.GetBy(ctx, by[0], by[1]); !errors.Is(err, repo.ErrNotFound) {
					t.Fatalf("GetBy(%s) err = %v, want ErrNotFound", by[0], err)
				}
			}
			e.exec(t, "INSERT INTO members (id, email, handle, name) VALUES (1, 'ada@example.com', 'ada', 'Ada')")
			e.sync(t, inv)
			check := func(when, email, handle, want string) {
				t.Helper()
				if m, err := members.Get(ctx, 1); err != nil || m.Name != want {
					t.Errorf("%s: Get = %+v, %v; want %s", when, m, err, want)
				}
				for _, by := range [][2]string{{"email", email}, {"handle", handle}} {
					if m, err := members.GetBy(ctx, by[0], by[1]); err != nil || m.Name != want {
						t.Errorf("%s: GetBy(%s, %s) = %+v, %v; want %s", when, by[0], by[1], m, err, want)
					}
				}
			}
			check("after INSERT", "ada@example.com", "ada", "Ada")

			e.exec(t, "UPDATE members SET email = 'ada@lovelace.org', handle = 'lovelace', name = 'Ada L' WHERE id = 1")
			e.sync(t, inv)
			check("after UPDATE", "ada@lovelace.org", "lovelace", "Ada L")
			for _, by := range [][2]string{{"email", "ada@example.com"}, {"handle", "ada"}} {
				if _, err := members.GetBy(ctx, by[0], by[1]); !errors.Is(err, repo.ErrNotFound) {
					t.Errorf("after UPDATE: GetBy(%s, old) err = %v, want ErrNotFound", by[0], err)
				}
			}

			e.exec(t, "DELETE FROM members WHERE id = 1")
			e.sync(t, inv)
			if _, err := members.Get(ctx, 1); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("after DELETE: Get err = %v, want ErrNotFound", err)
			}
			for _, by := range [][2]string{{"email", "ada@lovelace.org"}, {"handle", "lovelace"}} {
				if _, err := members.GetBy(ctx, by[0], by[1]); !errors.Is(err, repo.ErrNotFound) {
					t.Errorf("after DELETE: GetBy(%s) err = %v, want ErrNotFound", by[0], err)
				}
			}
		})
	}
}
