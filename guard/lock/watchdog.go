package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// watchdog is one running AutoRefresh.
type watchdog struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when its goroutine returns
}

// AutoRefresh keeps the lock alive: every third of its ttl (the ttl of
// Obtain, or of the last Refresh) it refreshes the lock for that ttl again,
// until Release, stop, or the end of ctx.
//
// It returns a context derived from ctx for the work the lock protects.
// That context is cancelled when stop is called, when Release is called,
// and when the lock is lost: a refresh found another holder or none, or
// refreshes kept failing (Redis unreachable) until the lock's ttl ran out.
// On a loss, context.Cause of the returned context matches ErrLockNotHeld.
//
// stop ends the watchdog and waits for it; it does not release the lock.
// Calling AutoRefresh again replaces the running watchdog, whose context is
// then cancelled.
func (l *Lock) AutoRefresh(ctx context.Context) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{cancel: cancel, done: make(chan struct{})}
	l.mu.Lock()
	old := l.watch
	l.watch = w
	l.mu.Unlock()
	if old != nil {
		old.halt()
	}
	go l.runWatch(wctx, w)
	stop := func() {
		l.mu.Lock()
		if l.watch == w {
			l.watch = nil
		}
		l.mu.Unlock()
		w.halt()
	}
	return wctx, stop
}

func (w *watchdog) halt() {
	w.cancel(context.Canceled)
	<-w.done
}

func (l *Lock) stopWatch() {
	l.mu.Lock()
	w := l.watch
	l.watch = nil
	l.mu.Unlock()
	if w != nil {
		w.halt()
	}
}

func (l *Lock) runWatch(ctx context.Context, w *watchdog) {
	defer close(w.done)
	ttl := time.Duration(l.ttl.Load())
	validUntil := time.Now().Add(ttl)
	t := time.NewTimer(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ttl = time.Duration(l.ttl.Load())
		interval := ttl / 3
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, interval)
		err := l.Refresh(rctx, ttl)
		cancel()
		switch {
		case err == nil:
			validUntil = start.Add(ttl)
			t.Reset(interval)
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrLockNotHeld):
			w.cancel(err)
			return
		default:
			// Redis did not answer: the lock may still be ours. Retry
			// sooner, until its ttl would have run out.
			left := time.Until(validUntil)
			if left <= 0 {
				w.cancel(fmt.Errorf("%w: %q expired while refreshes failed: %w", ErrLockNotHeld, l.name, err))
				return
			}
			t.Reset(min(interval/3+1, left))
		}
	}
}
