package configstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// redisError marks an error of Redis, or of the network to it, on the read
// path, as opposed to one of the database, of the caller's context, or
// ErrTimeout (Redis works; another process holds the rebuild lock). Only a
// redisError lets a read fall back to the table. It reads as the error it
// wraps.
type redisError struct{ err error }

func (e *redisError) Error() string { return e.err.Error() }
func (e *redisError) Unwrap() error { return e.err }

// redisErr marks err (not nil) as Redis's.
func redisErr(err error) error { return &redisError{err} }

// allFlight is the fallback flight of All. Keys are never empty, so it
// cannot collide with the flight of a Get.
const allFlight = ""

// fallBack reports whether a read that failed with err may read the table
// instead: the failure is Redis's, the fallback is on, and the caller's
// context is live.
func (s *Store) fallBack(ctx context.Context, err error) bool {
	var re *redisError
	return !s.opts.NoDBFallback && ctx.Err() == nil &&
		errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// readFailed returns the error of a read that failed with err and will not
// fall back: if the caller's context has ended, one that matches its
// cause as well as err.
func readFailed(ctx context.Context, err error) error {
	if ctx.Err() == nil || errors.Is(err, context.Cause(ctx)) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, context.Cause(ctx))
}

// readTable reads keys (nil: all) from the table for a read that Redis
// failed with cause. Concurrent readers of the same flight share one
// query, which runs detached from any one reader's context, bounded by
// WaitTimeout; each reader stops waiting when its own context ends. The
// result is shared: callers must not change it.
func (s *Store) readTable(ctx context.Context, flight string, keys []string, cause error) (map[string]entry, error) {
	ch := s.fallbacks.DoChan(flight, func() (any, error) {
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WaitTimeout)
		defer cancel()
		s.stats.fallbackQueries.Add(1)
		return s.load(qctx, keys)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, fmt.Errorf("%w; reading the table instead: %w", cause, r.Err)
		}
		s.stats.dbFallbacks.Add(1)
		return r.Val.(map[string]entry), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("configstore: reading the table after %v: %w", cause, context.Cause(ctx))
	}
}
