package bloom

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/token"
)

// Source streams every key that belongs in the filter, in batches, calling
// add for each batch. It must return add's error if add fails; a Source
// that returns nil anyway still fails the Rebuild, since keys of the failed
// batch would read as absent. add may be called from several goroutines at
// once, but only until Source returns.
type Source func(ctx context.Context, add func(keys []string) error) error

// errRebuildOver is returned by a Source's add called after Rebuild ended.
var errRebuildOver = errors.New("bloom: add called after the rebuild ended")

// cleanupTimeout bounds the abort of a failed rebuild, which runs even when
// the caller's context is done.
const cleanupTimeout = 10 * time.Second

// Rebuild fills a new generation of the filter with the keys src streams,
// then switches readers to it, marks it complete (trusted: its "false"
// answers are certain) and deletes the old one. It is how a filter is
// filled the first time, and how it is repaired after its keys in Redis
// were lost. Keys added with Add
// while it runs land in both generations, so a key in the source, or added
// meanwhile, never reads as absent; keys in neither are dropped, which is
// how a rebuild clears a filter that has outgrown its capacity or holds
// deleted ids.
//
// Source should read its keys after Rebuild has called it (not before), so
// that a key written to the database and Added before that is in the
// source, and one Added after is written to both generations.
//
// On error, including a Source error or panic (ErrPanic) and a
// cancelled ctx, the rebuild is aborted and readers keep the current
// generation. If a newer Rebuild of the same filter starts meanwhile, this
// one returns ErrRebuildSuperseded and the newer one finishes the job.
func (f *Filter) Rebuild(ctx context.Context, src Source) (err error) {
	if src == nil {
		return fmt.Errorf("bloom: rebuild filter %q: nil Source", f.name)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	lease := token.New()

	// Whatever goes wrong from here, even a panic in src, give the next
	// generation back: shards that switched stay switched (they are
	// complete), the others keep their current generation.
	switched := make([]bool, f.layout.shards)
	defer func() {
		if err == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if aerr := f.abort(cctx, lease, switched); aerr != nil {
			err = fmt.Errorf("%w (and aborting it failed: %v)", err, aerr)
		}
	}()

	// 1. Every shard: clear the next buffer, start writing adds to both.
	if err := f.perShard(ctx, beginScript, []any{f.layout.fingerprint, lease}, nil); err != nil {
		return fmt.Errorf("bloom: rebuild filter %q: begin: %w", f.name, err)
	}

	// 2. Fill the next generation from the source.
	var over atomic.Bool
	var addErr atomic.Pointer[error] // the first failed add
	lead := []any{lease, f.layout.k}
	add := func(keys []string) error {
		if over.Load() {
			return errRebuildOver
		}
		err := f.batch(ctx, fillScript, lead, keys, nil)
		if err != nil {
			addErr.CompareAndSwap(nil, &err)
		}
		return err
	}
	err = runSource(ctx, src, add)
	over.Store(true)
	if p := addErr.Load(); err == nil && p != nil {
		// Switching now would drop the failed batch's keys.
		err = fmt.Errorf("the Source returned nil after add failed: %w", *p)
	}
	if err != nil {
		return fmt.Errorf("bloom: rebuild filter %q: %w", f.name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bloom: rebuild filter %q: %w", f.name, err)
	}

	// 3. Every shard: mark the new generation complete, move readers to
	// it, delete the old.
	// Each shard switches atomically, and an element lives in one shard,
	// so no reader ever sees a half-built generation.
	superseded := 0
	err = f.perShard(ctx, switchScript, []any{lease, f.layout.shardBits}, func(shard int, cmd *redis.Cmd) error {
		switch serr := f.mapScriptError(cmd.Err()); {
		case serr == nil:
			switched[shard] = true
		case errors.Is(serr, ErrRebuildSuperseded):
			superseded++
		default:
			return serr
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bloom: rebuild filter %q: switch: %w", f.name, err)
	}
	if superseded > 0 {
		return fmt.Errorf("%w: filter %q: %d of %d shards were taken over", ErrRebuildSuperseded, f.name, superseded, f.layout.shards)
	}
	return nil
}

// runSource calls src, turning a panic into an error: src is caller code
// running on the caller's goroutine, and a panic must not leave the filter
// writing two generations forever (the deferred abort still runs either
// way; recovering lets the caller see which rebuild failed and why).
func runSource(ctx context.Context, src Source, add func([]string) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, r)
		}
	}()
	return src(ctx, add)
}

// abort gives up the rebuild token on every shard that has not switched.
func (f *Filter) abort(ctx context.Context, token string, switched []bool) error {
	var calls []call
	for s, done := range switched {
		if !done {
			calls = append(calls, call{shard: s, args: []any{token}})
		}
	}
	for len(calls) > 0 {
		n := min(len(calls), pipeCalls)
		if _, err := f.exec(ctx, abortScript, calls[:n]); err != nil {
			return err
		}
		calls = calls[n:]
	}
	return nil
}
