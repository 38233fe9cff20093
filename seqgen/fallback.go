package seqgen

import (
	"context"
	"errors"
	"fmt"
)

// spare is a segment this process reserved in the DB to issue from itself
// while Redis is down. It is never installed in Redis, and Redis only ever
// counts inside segments installed in it, so no number of a spare can come
// out of Redis, now or after it is back. Numbers left in it when Redis
// returns wait for the next outage of the same day.
type spare struct {
	// lock is held (a token in it) by the one caller using or refilling the
	// spare; a channel so that waiting honours the caller's context.
	lock     chan struct{}
	day      string // guarded by lock: the yyyymmdd of the segment
	last, hi int64  // guarded by lock: numbers last+1 .. hi are free
}

// takeLocal issues n numbers of biz on day from this process's spare
// segment, reserving a fresh one in the DB when it has too few. down is the
// Redis failure that brought the caller here.
func (g *Generator) takeLocal(ctx context.Context, biz string, day Day, n int64, down error) (int64, error) {
	s := g.spareOf(biz)
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-s.lock }()
	if s.day != day.Key || s.hi-s.last < n {
		// The same reservation as a seed: a fresh segment above the DB
		// mark, whatever Redis counted.
		lo, hi, err := g.reserve(ctx, biz, day, 0, n, true)
		if err != nil {
			return 0, g.dbFailed(ctx, biz, day, fmt.Errorf("%w; %w", down, err))
		}
		g.ctr.reserved.Add(1)
		s.day, s.last, s.hi = day.Key, lo, hi
		if hi-lo < n { // capped at the day's limit
			return 0, ErrExhausted
		}
	}
	s.last += n
	g.ctr.fallbacks.Add(1)
	return s.last - n + 1, nil
}

// spareOf returns the spare segment of biz, creating it.
func (g *Generator) spareOf(biz string) *spare {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.spares[biz]
	if s == nil {
		s = &spare{lock: make(chan struct{}, 1)}
		g.spares[biz] = s
	}
	return s
}

// dbFailed returns the error of a reservation that failed: the caller's
// context error or one of the package's sentinels as they are, anything
// else wrapped in ErrUnavailable (no number can be issued without the DB).
func (g *Generator) dbFailed(ctx context.Context, biz string, day Day, err error) error {
	if errors.Is(err, ErrExhausted) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrPanic) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: reserve %q %s: %w", ErrUnavailable, biz, day.Key, err)
}
