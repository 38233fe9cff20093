package rowchange

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// entity invalidates by failing with err, or succeeding when it is nil.
type entity struct {
	name string
	err  error
	got  []string
}

func (e *entity) Name() string { return e.name }
func (e *entity) Invalidate(_ context.Context, ids ...string) error {
	e.got = append(e.got, ids...)
	return e.err
}

// Try returns the work of the targets that failed, except those whose
// client is closed: they can never succeed.
func TestWork_Try(t *testing.T) {
	ok := &entity{name: "ok"}
	down := &entity{name: "down", err: errors.New("dial tcp: connection refused")}
	closed := &entity{name: "closed", err: fmt.Errorf("cacheaside: %w", redis.ErrClosed)}
	var w Work
	w.Invalidate(ok, "1", "2")
	w.Invalidate(down, "3")
	w.Invalidate(closed, "4")
	failed, err := w.Try(context.Background())
	if err == nil || failed == nil || failed.Len() != 1 {
		t.Fatalf("Try = %v work, %v; want the one id of the down entity", failed, err)
	}
	if len(ok.got) != 2 || len(down.got) != 1 || len(closed.got) != 1 {
		t.Fatalf("calls: ok %v, down %v, closed %v", ok.got, down.got, closed.got)
	}
	down.err = nil
	if again, err := failed.Try(context.Background()); again != nil || err != nil || len(down.got) != 2 {
		t.Fatalf("Try again = %v, %v (down got %v)", again, err, down.got)
	}
}

// filter distrusts by failing with err, or succeeding when it is nil.
type filter struct {
	err   error
	calls int
}

func (f *filter) Distrust(context.Context) error { f.calls++; return f.err }

// A distrust is queued once however often it is asked for, survives a
// Merge, and is handed back to retry when it fails.
func TestWork_Distrust(t *testing.T) {
	f := &filter{err: errors.New("i/o timeout")}
	var w, other Work
	w.Distrust(f, "users")
	other.Distrust(f, "users")
	w.Merge(&other)
	if w.Len() != 1 {
		t.Fatalf("Len = %d, want 1", w.Len())
	}
	failed, err := w.Try(context.Background())
	if err == nil || failed == nil || failed.Len() != 1 || f.calls != 1 {
		t.Fatalf("Try = %v work, %v, %d calls; want the distrust back", failed, err, f.calls)
	}
	f.err = nil
	if again, err := failed.Try(context.Background()); again != nil || err != nil || f.calls != 2 {
		t.Fatalf("Try again = %v, %v, %d calls", again, err, f.calls)
	}
}
