package asidekit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

func TestNew_namespaceRequired(t *testing.T) {
	r := testcontainers.Redis(t)
	if _, err := asidekit.New(asidekit.Config{Redis: r.Client}); !errors.Is(err, asidekit.ErrInvalid) {
		t.Errorf("New without Namespace = %v, want ErrInvalid", err)
	}
	if _, err := asidekit.New(asidekit.Config{Namespace: "svc"}); !errors.Is(err, asidekit.ErrInvalid) {
		t.Errorf("New without Redis = %v, want ErrInvalid", err)
	}
	_, err := asidekit.New(asidekit.Config{Namespace: "svc", Redis: r.Client,
		Cache: &cacheaside.Options{Namespace: "other"}})
	if !errors.Is(err, asidekit.ErrInvalid) {
		t.Errorf("New with a second namespace = %v, want ErrInvalid", err)
	}
}

// TestKit_everyKeyInTheNamespace: the cache, a filter, a limiter and a
// generator built by the Kit write only keys under its namespace, said once.
func TestKit_everyKeyInTheNamespace(t *testing.T) {
	r := testcontainers.Redis(t)
	pg := testcontainers.Postgres(t)
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	ns := r.Namespace + "svc"
	kit, err := asidekit.New(asidekit.Config{Namespace: ns, Redis: r.Client, DB: pg.DB})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close() })
	ctx := context.Background()
	count := func() int {
		keys, err := scanAll(ctx, r.Client, ns+"*")
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}

	e, err := cacheaside.NewEntity[string](kit.Cache(), "products", cacheaside.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := kit.Filter("products", &bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	l, err := limit.NewGCRA(r.Client, limit.GCRA{Rate: limit.PerSecond(10)}, kit.LimitOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	g, err := kit.Generator(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	steps := []struct {
		name string
		do   func() error
	}{
		{"cache", func() error { return e.Set(ctx, "p1", "v") }},
		{"filter", func() error { return f.Add(ctx, "p1") }},
		{"limiter", func() error { _, err := l.Allow(ctx, "1.2.3.4"); return err }},
		{"generator", func() error { _, err := g.Next(ctx, "ORD"); return err }},
	}
	for _, s := range steps {
		before := count()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if after := count(); after <= before {
			t.Errorf("%s wrote no key under %q (%d keys before, %d after)", s.name, ns, before, after)
		}
	}
	if _, err := kit.Filter("x", &bloom.Options{Namespace: "other"}); !errors.Is(err, asidekit.ErrInvalid) {
		t.Errorf("Filter in another namespace = %v, want ErrInvalid", err)
	}
}

func scanAll(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	var out []string
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		if !strings.HasPrefix(iter.Val(), strings.TrimSuffix(pattern, "*")) {
			continue
		}
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

type profileV1 struct{ Name string }

type billingProfile struct{ IBAN string }

// Two programs' entities of one name on one namespace: another type is a
// collision, the same type (another instance) is not.
func TestNewEntity_collision(t *testing.T) {
	r := testcontainers.Redis(t)
	kit := func() *asidekit.Kit {
		k, err := asidekit.New(asidekit.Config{Namespace: r.Namespace, Redis: r.Client})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.Close() })
		return k
	}
	if _, err := asidekit.NewEntity[profileV1](kit(), "profile", cacheaside.Policy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := asidekit.NewEntity[profileV1](kit(), "profile", cacheaside.Policy{}); err != nil {
		t.Fatalf("NewEntity of the same type again = %v", err)
	}
	_, err := asidekit.NewEntity[billingProfile](kit(), "profile", cacheaside.Policy{})
	if !errors.Is(err, asidekit.ErrNamespaceCollision) || !strings.Contains(err.Error(), "asidekit_test.profileV1") ||
		!strings.Contains(err.Error(), "asidekit_test.billingProfile") {
		t.Fatalf("NewEntity of another type = %v, want ErrNamespaceCollision naming both", err)
	}
	// Shared on purpose: cacheaside.NewEntity on the Kit's Cache checks nothing.
	if _, err := cacheaside.NewEntity[billingProfile](kit().Cache(), "profile", cacheaside.Policy{}); err != nil {
		t.Fatal(err)
	}
}
