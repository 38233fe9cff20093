package cdc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/repo/cdc"
)

// Setup is idempotent; Drop removes the slot and the publication, and
// refuses while a process holds the slot.
func TestInvalidator_setupAndDrop(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	inv := e.invalidator(t, cdc.Options{})
	for range 2 {
		if err := inv.Setup(ctx); err != nil {
			t.Fatal(err)
		}
	}
	count := func(sql string) int {
		var n int
		if err := e.db.Raw(sql, e.slot).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count("SELECT count(*) FROM pg_replication_slots WHERE slot_name = ?") != 1 ||
		count("SELECT count(*) FROM pg_publication_tables WHERE pubname = ?") != 1 {
		t.Fatal("want one slot and one published table")
	}
	stop := run(t, inv)
	waitFor(t, "the slot to be held", func() bool { return inv.Stats().Active })
	if err := inv.Drop(ctx); !errors.Is(err, cdc.ErrSlotActive) {
		t.Fatalf("Drop while held: %v, want ErrSlotActive", err)
	}
	stop()
	waitFor(t, "the slot to be released", func() bool {
		return count("SELECT count(*) FROM pg_replication_slots WHERE slot_name = ? AND active") == 0
	})
	if err := inv.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if count("SELECT count(*) FROM pg_replication_slots WHERE slot_name = ?") != 0 ||
		count("SELECT count(*) FROM pg_publication WHERE pubname = ?") != 0 {
		t.Fatal("Drop left the slot or the publication")
	}
}

// With REPLICA IDENTITY FULL the log carries the old email, so its GetBy
// mapping is dropped at once; without it the mapping stays cached (GetBy's
// row check drops it on the next read).
func TestInvalidator_replicaIdentityFull(t *testing.T) {
	t.Parallel()
	for _, full := range []bool{false, true} {
		e := redisEnv(t)
		ctx := context.Background()
		e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
		if err := e.users.WarmFilter(ctx); err != nil {
			t.Fatal(err)
		}
		inv := e.invalidator(t, cdc.Options{})
		if full {
			if err := inv.SetReplicaIdentityFull(ctx); err != nil {
				t.Fatal(err)
			}
		}
		run(t, inv)
		e.sync(t, inv)
		if _, err := e.users.GetBy(ctx, "email", "ada@example.com"); err != nil {
			t.Fatal(err)
		}
		mapping := e.ns + ":{users.by.email:ada@example.com}"
		if n, _ := e.rdb.Exists(ctx, mapping).Result(); n != 1 {
			t.Fatalf("mapping key %s not cached", mapping)
		}
		e.exec(t, "UPDATE users SET email = 'ada@lovelace.org' WHERE id = 1")
		e.sync(t, inv)
		n, err := e.rdb.Exists(ctx, mapping).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int64{false: 1, true: 0}[full]; n != want {
			t.Errorf("full=%v: old mapping cached = %d, want %d", full, n, want)
		}
		if _, err := e.users.GetBy(ctx, "email", "ada@example.com"); err == nil {
			t.Errorf("full=%v: GetBy(old email) found a row", full)
		}
	}
}
