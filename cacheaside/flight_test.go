package cacheaside

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// A shared load whose fn calls runtime.Goexit gives every caller, the one
// that started it and the ones that joined, ErrLoaderGoexit: never a zero
// value with a nil error.
func TestFlight_goexit(t *testing.T) {
	t.Parallel()
	var g flight[int]
	ctx := context.Background()
	joined := make(chan struct{})
	fn := func(context.Context, func()) (int, outcome, error) {
		<-joined
		runtime.Goexit()
		return 1, validAll, nil
	}
	type result struct {
		v     int
		retry bool
		err   error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			v, retry, err := g.do(ctx, "k", fn)
			results <- result{v, retry, err}
		}()
	}
	for { // both callers are in before fn may end
		g.mu.Lock()
		refs := 0
		if c := g.calls["k"]; c != nil {
			refs = c.refs
		}
		g.mu.Unlock()
		if refs == 2 {
			break
		}
		runtime.Gosched()
	}
	close(joined)
	for range 2 {
		r := <-results
		if !errors.Is(r.err, ErrLoaderGoexit) || r.v != 0 || r.retry {
			t.Fatalf("do = %d, retry %v, %v; want 0, false, ErrLoaderGoexit", r.v, r.retry, r.err)
		}
	}
	// The key is free again: the next call runs fn anew.
	v, _, err := g.do(ctx, "k", func(context.Context, func()) (int, outcome, error) { return 7, validAll, nil })
	if v != 7 || err != nil {
		t.Fatalf("next do = %d, %v; want 7, nil", v, err)
	}
}

// Through Entity.Get: a loader that calls runtime.Goexit (t.FailNow, for
// one) makes Get fail with ErrLoaderGoexit, and nothing is cached.
func TestEntity_Get_loaderGoexit(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	for _, s := range []Strategy{SingleFlight, Mutex, AsyncRefresh} {
		t.Run(s.String(), func(t *testing.T) {
			e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "goexit-"+s.String(), Policy{Strategy: s})
			ctx := context.Background()
			_, err := e.Get(ctx, "1", func(context.Context, string) (user, error) {
				runtime.Goexit()
				return user{ID: "1"}, nil
			})
			if !errors.Is(err, ErrLoaderGoexit) {
				t.Fatalf("Get = %v, want ErrLoaderGoexit", err)
			}
			l := &counter{}
			if u, err := e.Get(ctx, "1", l.load); err != nil || u.ID != "1" || l.calls.Load() != 1 {
				t.Fatalf("next Get = %+v, %v after %d loads; want a fresh load", u, err, l.calls.Load())
			}
		})
	}
}
