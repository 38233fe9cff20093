package cacheaside

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// ReadBefore reads an entry's version and the generations of lists of its
// Cache in one round trip, each answer what Version and Seen return on
// their own; lists of another Cache are read apart, and a version that
// cannot be read fails alone.
func TestEntity_ReadBefore(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c, _, rt := countedCache(t, r)
	e := newEntity[user](t, c, "u", Policy{})
	a, err := NewListGenerations(c, "u.gen.a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewListGenerations(c, "u.gen.b")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewListGenerations(newCache(t, r.Client, r.Namespace, nil), "u.gen.other")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Invalidate(ctx, "1"); err != nil { // a version
		t.Fatal(err)
	}
	for _, g := range []*ListGenerations{a, other} {
		if _, err := g.Read(ctx, "x"); err != nil { // a generation
			t.Fatal(err)
		}
	}
	wantVer, err := e.Version(ctx, "1")
	if err != nil || wantVer == "" {
		t.Fatalf("Version = %q, %v; want a token", wantVer, err)
	}
	wantX := a.Seen(ctx, "x")["x"]
	if wantX == "" {
		t.Fatal("Seen of a read list is empty")
	}

	rt.n.Store(0)
	s := e.ReadBefore(ctx, "1", true, []ListRead{{a, []string{"x", "y"}}, {b, []string{"z"}}})
	if n := rt.n.Load(); n != 1 {
		t.Errorf("ReadBefore of a version and three lists: %d round trips, want 1", n)
	}
	if s.Version != wantVer || s.VersionErr != nil {
		t.Errorf("Version = %q, %v; want %q", s.Version, s.VersionErr, wantVer)
	}
	if x := s.Lists[0]; len(x) != 2 || x["x"] != wantX || x["y"] != "" {
		t.Errorf("list a = %v; want x %q and y \"\"", s.Lists[0], wantX)
	}
	if z, ok := s.Lists[1]["z"]; !ok || z != "" {
		t.Errorf("list b = %v; want z \"\" (no generation)", s.Lists[1])
	}

	// Nothing asked: no round trip.
	rt.n.Store(0)
	if s := e.ReadBefore(ctx, "1", false, nil); s.Version != "" || s.VersionErr != nil || rt.n.Load() != 0 {
		t.Errorf("ReadBefore of nothing = %+v after %d round trips", s, rt.n.Load())
	}

	// Another Cache's lists are read on their own, and answered.
	s = e.ReadBefore(ctx, "1", false, []ListRead{{other, []string{"x"}}})
	if s.Lists[0]["x"] != other.Seen(ctx, "x")["x"] || s.Lists[0]["x"] == "" {
		t.Errorf("another Cache's list = %v", s.Lists[0])
	}

	// An id that cannot be a key fails the version alone.
	s = e.ReadBefore(ctx, "", true, []ListRead{{a, []string{"x"}}})
	if !errors.Is(s.VersionErr, ErrInvalidID) || s.Lists[0]["x"] != wantX {
		t.Errorf("ReadBefore of an empty id = %+v; want ErrInvalidID and the list", s)
	}

	// A cancelled context: the version's error is the context's, nothing
	// is read.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s = e.ReadBefore(cctx, "1", true, []ListRead{{a, []string{"x"}}})
	if !errors.Is(s.VersionErr, context.Canceled) || len(s.Lists[0]) != 0 {
		t.Errorf("ReadBefore with a cancelled context = %+v", s)
	}
}

// A dead Redis: the version fails and the lists are left out (their
// writer bumps them); nothing blocks.
func TestEntity_ReadBefore_deadRedis(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	c := newCache(t, dead, "dead", nil)
	e := newEntity[user](t, c, "u", Policy{})
	g, err := NewListGenerations(c, "u.gen.a")
	if err != nil {
		t.Fatal(err)
	}
	s := e.ReadBefore(context.Background(), "1", true, []ListRead{{g, []string{"x"}}})
	if s.VersionErr == nil || len(s.Lists) != 1 || len(s.Lists[0]) != 0 {
		t.Errorf("ReadBefore on a dead Redis = %+v; want a version error and no list", s)
	}
}

// Version starts a version when the id has none, and returns the same
// token until a write replaces it; the token lives as long as a version
// of the entity does.
func TestEntity_Version_starts(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "u", Policy{TTL: time.Hour})
	ctx := context.Background()
	first, err := e.Version(ctx, "7")
	if err != nil || first == "" {
		t.Fatalf("Version of an id without one = %q, %v; want a new token", first, err)
	}
	if again, err := e.Version(ctx, "7"); err != nil || again != first {
		t.Fatalf("Version again = %q, %v; want %q", again, err, first)
	}
	key, _ := e.key("7")
	if ttl := r.Client.PTTL(ctx, key+":ver").Val(); ttl < time.Hour {
		t.Errorf("the started version lives %v, want at least the entry's TTL", ttl)
	}
	if err := e.Invalidate(ctx, "7"); err != nil {
		t.Fatal(err)
	}
	if now, err := e.Version(ctx, "7"); err != nil || now == first {
		t.Fatalf("Version after Invalidate = %q, %v; want another token than %q", now, err, first)
	}
}
