package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/backoff"
)

// wait waits for a held lock and takes it. It registers a waiter with the
// shared subscription first and tries again after that, so a release
// between the first try and the registration is not missed. Each failed
// try marks the lock, in the same script, so that its release is
// announced (see obtain.lua), and sleeps until a notification, or a
// timer: one backoff while the subscription is not live, else the
// holder's remaining ttl plus one backoff (an earlier release would have
// been announced: the mark outlasts the sleep, see markSlack).
func (l *Locker) wait(ctx context.Context, s *single, bound time.Duration) (int64, error) {
	name := s.lk.name
	l.stats.waits.Add(1)
	w, err := l.n.Register(s.msg)
	if err != nil {
		return 0, ErrClosed
	}
	obtained := false
	defer func() { l.n.Unregister(w, !obtained) }()

	var boundC <-chan time.Time
	if bound > 0 {
		bt := time.NewTimer(bound)
		defer bt.Stop()
		boundC = bt.C
	}
	timer := time.NewTimer(l.opts.MaxBackoff)
	defer timer.Stop()
	giveUp := func() error {
		l.stats.notObtained.Add(1)
		return fmt.Errorf("%w: %q still held after %v", ErrNotObtained, name, bound)
	}

	// A new subscription takes a round trip; waiting for it (at most one
	// MaxBackoff) keeps the first sleeps on notifications too.
	select {
	case <-l.n.Live():
	case <-timer.C:
	case <-ctx.Done():
		return 0, l.failed(ctx, name, ctx.Err())
	case <-boundC:
		return 0, giveUp()
	case <-l.n.Closed():
		return 0, ErrClosed
	}

	retry := backoff.New(l.opts.MinBackoff, l.opts.MaxBackoff)
	for {
		ok, v, err := s.attempt(ctx, true)
		if err != nil {
			return 0, l.failed(ctx, name, err)
		}
		if ok {
			obtained = true
			return v, nil
		}
		d := retry.Next()
		if v > 0 && l.n.LiveNow() {
			d += time.Duration(v) * time.Millisecond
		}
		timer.Stop()
		timer.Reset(d)
		l.stats.sleeps.Add(1)
		select {
		case <-w.C:
			l.stats.wakeNotified.Add(1)
			retry.Reset()
		case <-timer.C:
			l.stats.wakeTimer.Add(1)
		case <-ctx.Done():
			return 0, l.failed(ctx, name, ctx.Err())
		case <-boundC:
			return 0, giveUp()
		case <-l.n.Closed():
			return 0, ErrClosed
		}
	}
}
