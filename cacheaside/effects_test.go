package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// fakeEntity invalidates by failing with err, or succeeding when it is nil.
type fakeEntity struct {
	name string
	err  error

	mu  sync.Mutex // guards got: effects of one entity run concurrently
	got []string
}

func (e *fakeEntity) Name() string { return e.name }
func (e *fakeEntity) Invalidate(_ context.Context, ids ...string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ids...)
	return e.err
}
func (e *fakeEntity) cache() *Cache                       { return nil }
func (e *fakeEntity) InvalidateAll(context.Context) error { return e.err }
func (e *fakeEntity) Version(context.Context, string) (string, error) {
	return "", nil
}
func (e *fakeEntity) setIfVersion(_ context.Context, id, _ string, _ any) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, id)
	return false, e.err
}
func (e *fakeEntity) storeFromLog(_ context.Context, id string, _ uint64, _ any) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, id)
	return false, e.err
}

func invalidateFake(e *fakeEntity, ids ...string) Effect {
	return Effect{kind: effectInvalidate, ent: e, ids: ids}
}

// try returns the effects that failed, except those whose client is
// closed: they can never succeed.
func TestEffects_try(t *testing.T) {
	ok := &fakeEntity{name: "ok"}
	down := &fakeEntity{name: "down", err: errors.New("dial tcp: connection refused")}
	closed := &fakeEntity{name: "closed", err: fmt.Errorf("cacheaside: %w", redis.ErrClosed)}
	var w Effects
	w.Add(invalidateFake(ok, "1"), invalidateFake(down, "3"), invalidateFake(closed, "4"), invalidateFake(ok, "2"))
	if w.Len() != 4 || len(w.list) != 3 {
		t.Fatalf("Len = %d over %d effects; want 4 ids merged into 3", w.Len(), len(w.list))
	}
	failed, _, err := w.try(context.Background())
	if err == nil || failed == nil || failed.Len() != 1 {
		t.Fatalf("try = %v effects, %v; want the one id of the down entity", failed, err)
	}
	if len(ok.got) != 2 || len(down.got) != 1 || len(closed.got) != 1 {
		t.Fatalf("calls: ok %v, down %v, closed %v", ok.got, down.got, closed.got)
	}
	down.err = nil
	if again, _, err := failed.try(context.Background()); again != nil || err != nil || len(down.got) != 2 {
		t.Fatalf("try again = %v, %v (down got %v)", again, err, down.got)
	}
}

// Effects that compare what their own write read are kept one by one;
// the rest merge by target, in first-use order, and keep their own ids.
func TestEffects_merge(t *testing.T) {
	e := &fakeEntity{name: "e"}
	ids := []string{"1", "2"}
	var w, other Effects
	w.Add(invalidateFake(e, ids[:1]...))
	other.Add(Effect{kind: effectStoreIfVersion, ent: e, ids: []string{"9"}},
		Effect{kind: effectStoreIfVersion, ent: e, ids: []string{"9"}},
		invalidateFake(e, "3"), invalidateFake(e), Effect{})
	other.SetLSN(7)
	w.Merge(&other)
	if w.Len() != 4 || len(w.list) != 3 || w.LSN() != 7 {
		t.Fatalf("Len = %d over %d effects, LSN %d; want 4 over 3, LSN 7", w.Len(), len(w.list), w.LSN())
	}
	if got := w.list[0].ids; len(got) != 2 || got[1] != "3" || ids[1] != "2" {
		t.Fatalf("merged ids %v (caller's %v)", got, ids)
	}
	if _, _, err := w.try(context.Background()); err != nil || len(e.got) != 4 {
		t.Fatalf("try = %v, calls %v", err, e.got)
	}
}

// fakeFilter distrusts by failing with err, or succeeding when it is nil.
type fakeFilter struct {
	err   error
	calls int
}

func (f *fakeFilter) AddMany(context.Context, []string) error { return nil }
func (f *fakeFilter) Distrust(context.Context) error          { f.calls++; return f.err }

// A Distrust is queued once however often it is asked for, survives a
// Merge, and is handed back to retry when it fails.
func TestEffects_Distrust(t *testing.T) {
	f := &fakeFilter{err: errors.New("i/o timeout")}
	var w, other Effects
	w.Add(Distrust(f, "users"))
	other.Add(Distrust(f, "users"))
	w.Merge(&other)
	if w.Len() != 1 {
		t.Fatalf("Len = %d, want 1", w.Len())
	}
	failed, _, err := w.try(context.Background())
	if err == nil || failed == nil || failed.Len() != 1 || f.calls != 1 {
		t.Fatalf("try = %v effects, %v, %d calls; want the distrust back", failed, err, f.calls)
	}
	f.err = nil
	if again, _, err := failed.try(context.Background()); again != nil || err != nil || f.calls != 2 {
		t.Fatalf("try again = %v, %v, %d calls", again, err, f.calls)
	}
}
