package configstore_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/repo/configstore"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/testcontainers"
)

// Every script touches one hash tag, so the whole package works on a
// Redis Cluster.
func TestStore_cluster(t *testing.T) {
	t.Parallel()
	pg := testcontainers.Postgres(t)
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	rc := testcontainers.RedisCluster(t)
	b := backends{pg: pg, r: rc}
	ctx := ctxT(t)
	s := b.store(t, rc.Client, pg.DB, &configstore.Options{Scope: "cluster scope"})
	cc := rc.Client.(*redis.ClusterClient)
	if a, l := cc.ClusterKeySlot(ctx, s.Key()).Val(), cc.ClusterKeySlot(ctx, s.Key()+":lock").Val(); a != l {
		t.Fatalf("hash in slot %d, lock in slot %d", a, l)
	}

	var local configstore.Local
	follow(t, ctx, b.store(t, rc.NewClient(t), pg.DB, &configstore.Options{Scope: "cluster scope"}), &local)
	if err := s.SetMany(ctx, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := rc.Client.Del(ctx, s.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "a"); err != nil || v != "1" {
		t.Fatalf("Get after the hash was deleted = %q, %v", v, err)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("Get of a deleted key: %v", err)
	}
	if err := rc.Client.HSet(ctx, s.Key(), "a", "1:drift").Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Reconcile(ctx); err != nil || r.Fixes() != 1 {
		t.Fatalf("Reconcile = %+v, %v", r, err)
	}
	converges(t, &local, func() map[string]string { return map[string]string{"a": "1"} })
}
