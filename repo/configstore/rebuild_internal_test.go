package configstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/token"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/testcontainers"
)

// newStore returns a Store on a fresh database and Redis namespace.
func newStore(t *testing.T) (*Store, *testcontainers.RedisNamespace) {
	t.Helper()
	r := testcontainers.Redis(t)
	pg := testcontainers.Postgres(t)
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	s, err := New(r.Client, pg.DB, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// midRebuild sets a and b, deletes the hash, takes the rebuild lock and
// reads the table as a rebuild does, then deletes b: it returns the
// rebuild's lease and rows, which predate the Delete.
func midRebuild(t *testing.T, ctx context.Context, s *Store) (lease string, rows map[string]entry) {
	t.Helper()
	if err := s.SetMany(ctx, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.Del(ctx, s.hash).Err(); err != nil {
		t.Fatal(err)
	}
	lease = token.New()
	if state, err := lockScript.Run(ctx, s.rdb, []string{s.hash, s.lock}, lease, "30000").Int(); err != nil || state != 2 {
		t.Fatalf("lock = %d, %v", state, err)
	}
	rows, err := s.loadLocked(ctx, lease)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	return lease, rows
}

// The interleaving CI once hit, pinned: a rebuild reads the table, a
// Delete commits and is applied, the hash is then deleted (evicted), and
// only then does the rebuild land. Its rows are older than the Delete and
// the hash no longer holds the tombstone to say so: the rebuild must not
// land, and the next read must not see the deleted value.
func TestRebuild_hashDeletedMeanwhile_doesNotLand(t *testing.T) {
	t.Parallel()
	s, r := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lease, rows := midRebuild(t, ctx, s)
	if err := r.Client.Del(ctx, s.hash).Err(); err != nil {
		t.Fatal(err)
	}
	landed, err := s.fill(ctx, lease, rows)
	if err != nil {
		t.Fatal(err)
	}
	if landed {
		t.Fatal("a rebuild older than an applied write landed")
	}
	if n := r.Client.Exists(ctx, s.hash).Val(); n != 0 {
		t.Fatalf("the discarded rebuild wrote the hash (%v)", r.Client.HGetAll(ctx, s.hash).Val())
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of the deleted key: %v", err)
	}
	if v, err := s.Get(ctx, "a"); err != nil || v != "1" {
		t.Fatalf("Get a = %q, %v", v, err)
	}
	if st := s.Stats(); st.Rebuilds != 1 {
		t.Errorf("Stats = %+v, want the next read's one rebuild", st)
	}
}

// A write applied while a rebuild reads the table stays in the hash, and
// the rebuild lands around it: writes do not hold rebuilds off.
func TestRebuild_writeAppliedMeanwhile_lands(t *testing.T) {
	t.Parallel()
	s, r := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lease, rows := midRebuild(t, ctx, s)
	if landed, err := s.fill(ctx, lease, rows); err != nil || !landed {
		t.Fatalf("fill = %v, %v; want landed", landed, err)
	}
	if h := r.Client.HGetAll(ctx, s.hash).Val(); h["a"] != "1:1" || h["b"] != "2" || h[rebuildField] != "" || h[builtField] == "" {
		t.Fatalf("hash = %q, want a at 1, b's tombstone at 2, built, no rebuild token", h)
	}
	if n := r.Client.Exists(ctx, s.lock).Val(); n != 0 {
		t.Fatal("the lock was not released")
	}
}

// A rebuild that outlived its lock (it expired and another process took
// over) writes nothing.
func TestRebuild_lockExpired_doesNotLand(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	s := &Store{rdb: r.Client, hash: r.Namespace + ":cfg:{x}", lock: r.Namespace + ":cfg:{x}:lock", channel: r.Namespace + ":cfg:{x}:changes"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Client.Set(ctx, s.lock, "another holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Client.HSet(ctx, s.hash, rebuildField, "another holder").Err(); err != nil {
		t.Fatal(err)
	}
	landed, err := s.fill(ctx, "expired holder", map[string]entry{"k": {value: "old", version: 1}})
	if err != nil || landed {
		t.Fatalf("fill = %v, %v; want not landed", landed, err)
	}
	if h := r.Client.HGetAll(ctx, s.hash).Val(); len(h) != 1 {
		t.Fatalf("the rebuild wrote the hash without the lock: %q", h)
	}
	if v := r.Client.Get(ctx, s.lock).Val(); v != "another holder" {
		t.Fatalf("lock = %q: the other holder's lock was touched", v)
	}
}
