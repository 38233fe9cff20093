package repo_test

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// A near cache hit through Get makes no loader per call: it allocates
// nothing for an id whose text FormatInt keeps ready (0–99), and one
// string, the cache id, for any other.
func TestRepository_Get_localHitAllocs(t *testing.T) {
	e := newEnv(t)
	users := e.users(t, repo.Options{Policy: cacheaside.Policy{TTL: time.Hour, Local: &cacheaside.LocalPolicy{TTL: time.Hour}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.cache.WaitLocal(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]float64{7: 0, 123456: 1} {
		if err := users.Put(ctx, &sample.User{ID: id, Email: "allocs@example.com" + string(rune('a'+id%26)), Name: "n"}); err != nil {
			t.Fatal(err)
		}
		// Until a Get is a local hit: the fill's own write into Redis is
		// reported back by tracking, which drops the first local copy.
		for h := users.Stats().LocalHits; users.Stats().LocalHits == h; {
			if _, err := users.Get(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		hits := users.Stats().LocalHits
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := users.Get(ctx, id); err != nil {
				t.Fatal(err)
			}
		})
		if got := users.Stats().LocalHits - hits; got < 100 {
			t.Fatalf("id %d: %d local hits in 101 Gets, want all", id, got)
		}
		if allocs > want {
			t.Errorf("id %d: %v allocations per local hit, want %v", id, allocs, want)
		}
	}
}
