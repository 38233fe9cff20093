package cacheaside

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// A loader panic becomes an error for every waiter, in this process and in
// others, and the lease is released.
func TestEntity_Get_loaderPanic(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: 30 * time.Second}
	a := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	b := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	ctx := context.Background()
	entered, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var calls atomic.Int64
	load := func(ctx context.Context, id string) (user, error) {
		if calls.Add(1) == 1 {
			once.Do(func() { close(entered) })
			<-gate
			panic("boom")
		}
		return user{ID: id}, nil
	}
	const local = 10
	errs := make(chan error, local)
	for i := 0; i < local; i++ {
		go func() {
			_, err := a.Get(ctx, "1", load)
			errs <- err
		}()
	}
	<-entered
	remote := make(chan error, 1)
	go func() {
		_, err := b.Get(ctx, "1", load)
		remote <- err
	}()
	waitFor(t, 10*time.Second, func() bool { return b.Stats().LockWaits == 1 })
	close(gate)
	for i := 0; i < local; i++ {
		err := <-errs
		var pe *PanicError
		if !errors.Is(err, ErrPanic) || !errors.As(err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
			t.Fatalf("waiter %d: err = %v, want the panic as an error", i, err)
		}
	}
	// The lease was released, so the other process loads at once rather
	// than after LockTTL (a minute).
	select {
	case err := <-remote:
		if err != nil {
			t.Fatalf("other process: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the lease was not released after the panic")
	}
	if a.Stats().LoadErrors != 1 {
		t.Fatalf("load errors = %d", a.Stats().LoadErrors)
	}
}

// A loader error with a stale value within Grace serves the stale value.
func TestEntity_Get_staleOnLoaderError(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user",
		Policy{TTL: 100 * time.Millisecond, Jitter: -1, Grace: time.Minute, Strategy: SingleFlight})
	ctx := context.Background()
	if _, err := e.Get(ctx, "1", func(ctx context.Context, id string) (user, error) { return user{ID: id, Name: "v1"}, nil }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	dbDown := errors.New("db down")
	u, err := e.Get(ctx, "1", func(ctx context.Context, id string) (user, error) { return user{}, dbDown })
	if err != nil || u.Name != "v1" {
		t.Fatalf("Get = %+v, %v; want the stale value", u, err)
	}
	if s := e.Stats(); s.StaleServed != 1 || s.LoadErrors != 1 {
		t.Fatalf("stats = %+v", s)
	}
	// Without Grace the error comes through.
	e2 := newEntity[user](t, e.c, "user2", Policy{TTL: 100 * time.Millisecond, Jitter: -1})
	_, _ = e2.Get(ctx, "1", func(ctx context.Context, id string) (user, error) { return user{ID: id}, nil })
	time.Sleep(150 * time.Millisecond)
	if _, err := e2.Get(ctx, "1", func(ctx context.Context, id string) (user, error) { return user{}, dbDown }); !errors.Is(err, dbDown) {
		t.Fatalf("err = %v, want the loader's error", err)
	}
}

// MaxConcurrentLoads rejects callers over the cap at once.
func TestEntity_Get_overloaded(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user", Policy{MaxConcurrentLoads: 2})
	ctx := context.Background()
	gate := make(chan struct{})
	var in sync.WaitGroup
	in.Add(2)
	load := func(ctx context.Context, id string) (user, error) {
		in.Done()
		<-gate
		return user{ID: id}, nil
	}
	done := make(chan error, 2)
	for _, id := range []string{"a", "b"} {
		go func() {
			_, err := e.Get(ctx, id, load)
			done <- err
		}()
	}
	in.Wait()
	if _, err := e.Get(ctx, "c", load); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("err = %v, want ErrOverloaded", err)
	}
	close(gate)
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if e.Stats().Overloaded != 1 {
		t.Fatalf("overloaded = %d", e.Stats().Overloaded)
	}
}

// A caller whose context ends stops waiting at once; the shared load goes
// on for the others.
func TestEntity_Get_contextWhileWaiting(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user", Policy{Strategy: SingleFlight})
	entered, gate := make(chan struct{}), make(chan struct{})
	load := func(ctx context.Context, id string) (user, error) {
		close(entered)
		<-gate
		return user{ID: id}, nil
	}
	other := make(chan error)
	go func() {
		_, err := e.Get(context.Background(), "1", load)
		other <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Get(ctx, "1", load); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	close(gate)
	if err := <-other; err != nil {
		t.Fatal(err)
	}
}
