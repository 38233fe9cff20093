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
