package cacheaside

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestEntity_Get_readThrough(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	e := newEntity[user](t, c, "user", Policy{TTL: time.Minute, NullTTL: time.Minute})
	ctx := context.Background()
	var l counter
	l.absent = map[string]bool{"404": true}

	for i := 0; i < 3; i++ {
		u, err := e.Get(ctx, "42", l.load)
		if err != nil || u.ID != "42" || u.Name != "n-42" {
			t.Fatalf("Get = %+v, %v", u, err)
		}
		_, err = e.Get(ctx, "404", l.load)
		mustNotFound(t, err)
	}
	if n := l.calls.Load(); n != 2 {
		t.Fatalf("loader calls = %d, want 2 (one per id)", n)
	}
	s := e.Stats()
	if s.Hits != 2 || s.NullHits != 2 || s.Misses != 2 || s.Loads != 2 {
		t.Fatalf("stats = %+v", s)
	}
	key, _ := e.Key("42")
	if key != r.Namespace+":{user:42}" {
		t.Fatalf("key = %q", key)
	}
	ttl := r.Client.PTTL(ctx, key).Val()
	if ttl < 50*time.Second || ttl > 67*time.Second {
		t.Fatalf("TTL %v outside the jittered range [54s, 66s]", ttl)
	}
	if r.Client.Exists(ctx, key+":ver").Val() != 1 {
		t.Fatal("no version key after a load")
	}
}

func TestEntity_Set_Invalidate(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	e := newEntity[user](t, c, "user", Policy{})
	ctx := context.Background()
	var l counter
	if err := e.Set(ctx, "7", user{ID: "7", Name: "set"}); err != nil {
		t.Fatal(err)
	}
	u, err := e.Get(ctx, "7", l.load)
	if err != nil || u.Name != "set" || l.calls.Load() != 0 {
		t.Fatalf("Get after Set = %+v, %v, %d loads", u, err, l.calls.Load())
	}
	if err := e.Invalidate(ctx, "7", "7", "8"); err != nil {
		t.Fatal(err)
	}
	u, err = e.Get(ctx, "7", l.load)
	if err != nil || u.Name != "n-7" || l.calls.Load() != 1 {
		t.Fatalf("Get after Invalidate = %+v, %v, %d loads", u, err, l.calls.Load())
	}
}

func TestEntity_Get_nullCachingOff(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	e := newEntity[user](t, c, "user", Policy{NullTTL: Disabled})
	var l counter
	l.absent = map[string]bool{"x": true}
	for i := 0; i < 3; i++ {
		_, err := e.Get(context.Background(), "x", l.load)
		mustNotFound(t, err)
	}
	if n := l.calls.Load(); n != 3 {
		t.Fatalf("loader calls = %d, want 3 with NullTTL Disabled", n)
	}
}

func TestEntity_Get_badInput(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	e := newEntity[user](t, c, "user", Policy{})
	var l counter
	if _, err := e.Get(context.Background(), "", l.load); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("empty id: err = %v", err)
	}
	long := make([]byte, 2000)
	for i := range long {
		long[i] = 'a'
	}
	if _, err := e.Get(context.Background(), string(long), l.load); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("long id: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Get(ctx, "1", l.load); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: err = %v", err)
	}
	if l.calls.Load() != 0 {
		t.Fatalf("loader called %d times on bad input", l.calls.Load())
	}
	if _, err := NewEntity[user](c, "", Policy{}); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("empty name: err = %v", err)
	}
	// Keys with special characters stay inside their hash tag.
	k, err := e.Key("a}b:{c d")
	if err != nil || k != r.Namespace+":{user:a%7Db%3A%7Bc%20d}" {
		t.Fatalf("key = %q, %v", k, err)
	}
}
