package seqgen

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/backoff"
)

// flight is a reservation running in this process; done is closed when it
// ends, so local callers that find the counter at its mark wait for it
// instead of polling Redis.
type flight struct {
	done chan struct{}
}

// refill reserves a segment in the DB and installs it in Redis, releasing
// the lease the caller holds (token). observed is the counter value next.lua
// reported; seed says the counter key was missing. It reports whether the
// segment was installed (false: dropped, its numbers skipped).
func (g *Generator) refill(ctx context.Context, biz string, day Day, k keyset, token string, observed, n int64, seed bool) (bool, error) {
	f := g.startFlight(k.counter)
	defer g.endFlight(k.counter, f)

	lo, hi, err := g.reserve(ctx, biz, day, observed, n, seed)
	if err != nil {
		g.release(ctx, k, token)
		return false, g.dbFailed(ctx, biz, day, err)
	}
	g.ctr.reserved.Add(1)
	seedArg := "0"
	if seed {
		seedArg = "1"
	}
	// No retry of our own on failure: the segment is then skipped, never
	// installed twice, nor issued in-process (it may have been installed).
	res, err := redisCall(ctx, g, func(ctx context.Context) (int64, error) {
		return installScript.Run(ctx, g.rdb, k.list(), lo, hi, seedArg, g.opts.KeyTTL.Milliseconds(), token).Int64()
	}, nil)
	if err != nil {
		// The script may or may not have run; either way the lease, if
		// still ours, should not make others wait for LeaseTTL.
		g.release(ctx, k, token)
		return false, fmt.Errorf("seqgen: install segment (%d, %d] of %q %s: %w", lo, hi, biz, day.Key, err)
	}
	if res <= installDropped {
		g.ctr.dropped.Add(1)
		return false, nil
	}
	return true, nil
}

// refillAsync reserves the next segment in the background after next.lua
// handed this caller the lease at the refill threshold (double buffering).
// It is bounded by LeaseTTL and cancelled by Close.
func (g *Generator) refillAsync(biz string, day Day, k keyset, token string, last int64) {
	g.mu.Lock()
	closed := g.closed.Load()
	if !closed {
		g.wg.Add(1) // under mu, so that Close's Wait cannot miss it
	}
	g.mu.Unlock()
	if closed {
		g.release(context.Background(), k, token)
		return
	}
	g.ctr.background.Add(1)
	go func() {
		defer g.wg.Done()
		// A panic on this goroutine would kill the process: SeedFrom's are
		// already errors, and one of OnBackgroundError is dropped here.
		defer func() { _ = recover() }()
		ctx, cancel := context.WithTimeout(g.ctx, g.opts.LeaseTTL)
		defer cancel()
		_, err := g.refill(ctx, biz, day, k, token, last, 1, false)
		if err != nil && g.opts.OnBackgroundError != nil && g.ctx.Err() == nil {
			g.opts.OnBackgroundError(biz, err)
		}
	}()
}

// release gives up a lease without installing anything, best effort
// (even when the caller's context is done).
func (g *Generator) release(ctx context.Context, k keyset, token string) {
	_, _ = redisCall(context.WithoutCancel(ctx), g, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, releaseScript.Run(ctx, g.rdb, []string{k.lease}, token).Err()
	}, nil)
}

func (g *Generator) startFlight(key string) *flight {
	f := &flight{done: make(chan struct{})}
	g.mu.Lock()
	g.flights[key] = f
	g.mu.Unlock()
	return f
}

func (g *Generator) endFlight(key string, f *flight) {
	g.mu.Lock()
	if g.flights[key] == f {
		delete(g.flights, key)
	}
	g.mu.Unlock()
	close(f.done)
}

// maxBackoff caps the pause between polls while another process reserves.
const maxBackoff = 50 * time.Millisecond

// wait pauses a caller that found the counter at its mark while someone
// else holds the lease: until this process's reservation ends, or for a
// jittered, growing backoff when the holder is another process; never
// longer than atMost.
func (g *Generator) wait(ctx context.Context, key string, retry *backoff.Backoff, atMost time.Duration) error {
	atMost = max(atMost, 0)
	g.mu.Lock()
	f := g.flights[key]
	g.mu.Unlock()
	if f == nil {
		return backoff.Sleep(ctx, min(retry.Next(), atMost))
	}
	t := time.NewTimer(atMost) // at most maxWait, which is at most LeaseTTL
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-f.done:
	case <-t.C:
	}
	return nil
}
