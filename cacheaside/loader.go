package cacheaside

import (
	"context"
	"errors"
	"runtime/debug"
	"time"
)

// Loader loads id's value from the source of truth for Get. It returns
// ErrNotFound (or an error wrapping it) when id does not exist. A Loader
// may be shared by the concurrent callers of one id: it runs on a context
// that keeps the values of the caller that started it, and is cancelled
// when the last of them has left. RequiredLSN(ctx) tells it how new its
// read must be (see WithWriteLSN).
type Loader[T any] func(ctx context.Context, id string) (T, error)

// BatchLoader loads the values of ids for GetMany, by id: the ids it does
// not return do not exist. Returning ErrNotFound (or an error wrapping it)
// means the same as returning none of them.
type BatchLoader[T any] func(ctx context.Context, ids []string) (map[string]T, error)

// invoke calls load for id within the concurrency cap (see acquire),
// recovering a panic (see callLoader) and counting it as a load.
func (e *Entity[T]) invoke(ctx context.Context, id string, load Loader[T]) (T, time.Duration, error) {
	return callLoader(e, func() (T, error) { return load(ctx, id) })
}

// invokeMany is invoke for a batch loader: one call, one slot, one load.
func (e *Entity[T]) invokeMany(ctx context.Context, ids []string, load BatchLoader[T]) (map[string]T, time.Duration, error) {
	return callLoader(e, func() (map[string]T, error) { return load(ctx, ids) })
}

// callLoader makes one loader call f within e's MaxConcurrentLoads, times it and
// counts it as a load or a load error. A panic in f becomes a *PanicError.
// Recovering is deliberate: the load may be shared by many waiters (and
// hold a lease), and each of them must get an error instead of one
// goroutine crashing the process with the lease still held.
func callLoader[T, V any](e *Entity[T], f func() (V, error)) (v V, d time.Duration, err error) {
	if !e.acquire() {
		return v, 0, ErrOverloaded
	}
	defer e.release()
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = &PanicError{Value: r, Stack: debug.Stack()}
			}
		}()
		v, err = f()
	}()
	d = time.Since(start)
	if err == nil || errors.Is(err, ErrNotFound) {
		e.ctr.load(EventLoad, d)
	} else {
		e.ctr.load(EventLoadError, d)
	}
	return v, d, err
}

// acquire takes one of the entity's MaxConcurrentLoads slots without
// blocking; release gives it back.
func (e *Entity[T]) acquire() bool {
	if e.p.MaxConcurrentLoads < 0 {
		return true
	}
	if e.active.Add(1) > int64(e.p.MaxConcurrentLoads) {
		e.active.Add(-1)
		e.ctr.inc(EventOverloaded)
		return false
	}
	return true
}

func (e *Entity[T]) release() {
	if e.p.MaxConcurrentLoads >= 0 {
		e.active.Add(-1)
	}
}
