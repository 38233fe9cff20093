package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"
)

// callLoader calls load and turns a panic into a *PanicError. Recovering
// is deliberate: the load may be shared by many waiters (and hold a
// lease), and each of them must get an error instead of one goroutine
// crashing the process with the lease still held.
func callLoader[T any](ctx context.Context, id string, load func(context.Context, string) (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return load(ctx, id)
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

// timed runs f (one loader call) and counts it as a load or a load error.
func (e *Entity[T]) timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	d := time.Since(start)
	if err == nil || errors.Is(err, ErrNotFound) {
		e.ctr.load(EventLoad, d)
	} else {
		e.ctr.load(EventLoadError, d)
	}
	return d, err
}

// invoke calls load within the concurrency cap, counting it.
func (e *Entity[T]) invoke(ctx context.Context, id string, load func(context.Context, string) (T, error)) (v T, d time.Duration, err error) {
	if !e.acquire() {
		return v, 0, ErrOverloaded
	}
	defer e.release()
	d, err = e.timed(func() (err error) {
		v, err = callLoader(ctx, id, load)
		return err
	})
	return v, d, err
}

// loadDirect is the fail-open path: Redis is failing (or the breaker is
// open), so the loader answers alone and nothing is stored.
func (e *Entity[T]) loadDirect(ctx context.Context, id string, load func(context.Context, string) (T, error), st *stale[T]) (T, error) {
	f := func(ctx context.Context) (T, error) {
		v, _, err := e.invoke(ctx, id, load)
		return v, err
	}
	var v T
	var err error
	if e.p.Strategy == None {
		v, err = f(ctx)
	} else {
		v, _, err = e.flight.do(ctx, id, func(ctx context.Context, _ func()) (T, outcome, error) {
			v, err := f(ctx)
			return v, validAll, err
		})
	}
	return e.result(v, err, st)
}

// result maps a load's outcome to Get's: ErrNotFound plain, a stale value
// within Grace instead of an error.
func (e *Entity[T]) result(v T, err error, st *stale[T]) (T, error) {
	var zero T
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, ErrNotFound):
		return zero, ErrNotFound
	}
	if sv, ok := e.serveStale(st); ok {
		return sv, nil
	}
	return zero, err
}

// loadAndStore is a miss for None and SingleFlight: read the version (or
// a fresh entry stored since the miss), load, store unless invalidated
// meanwhile.
func (e *Entity[T]) loadAndStore(ctx context.Context, key, id string, load func(context.Context, string) (T, error), st *stale[T], mark func()) (T, outcome, error) {
	var zero T
	mark()
	ver, entry, err := e.readVersion(ctx, key)
	if err != nil {
		failed, cerr := e.c.redisErr(ctx, err)
		if cerr != nil {
			return zero, validAll, cerr
		}
		if failed {
			e.ctr.inc(EventCacheError)
		}
		v, _, err := e.invoke(ctx, id, load)
		v, err = e.result(v, err, st)
		return v, validAll, err
	}
	e.c.br.success()
	if entry != nil {
		if v, err, ok := e.decodeFresh(ctx, key, entry); ok {
			return v, validMarked, err
		}
	}
	v, d, err := e.invoke(ctx, id, load)
	return e.finish(ctx, key, ver, "", v, d, err, st, mark)
}

// readVersion runs version.lua for one key.
func (e *Entity[T]) readVersion(ctx context.Context, key string) (ver string, entry []byte, err error) {
	res, err := versionScript.Run(ctx, e.c.client, []string{key, key + ":ver"}, newToken(), e.verPX, time.Now().UnixMilli()).Slice()
	if err != nil {
		return "", nil, err
	}
	return parseVersion(res)
}

// parseVersion reads version.lua's reply.
func parseVersion(res []any) (ver string, entry []byte, err error) {
	if len(res) < 1 {
		return "", nil, fmt.Errorf("cacheaside: version.lua returned %d values", len(res))
	}
	ver, _ = res[0].(string)
	if len(res) > 1 {
		if s, ok := res[1].(string); ok {
			entry = []byte(s)
		}
	}
	return ver, entry, nil
}

// decodeFresh decodes an entry that a script found fresh: a value, or
// ErrNotFound for a null entry. ok is false (and the entry deleted) when it
// does not decode.
func (e *Entity[T]) decodeFresh(ctx context.Context, key string, entry []byte) (v T, err error, ok bool) {
	h, payload, derr := decodeEntry(entry)
	if derr == nil {
		if h.null {
			return v, ErrNotFound, true
		}
		if e.c.codec.Unmarshal(payload, &v) == nil {
			return v, nil, true
		}
	}
	e.corrupt(ctx, key)
	return v, nil, false
}

// finish stores a load's outcome (a value, or a "not found" when NullTTL
// is set) under version ver, releasing the lease token if any, and returns
// Get's result with the outcome for the callers sharing the load.
func (e *Entity[T]) finish(ctx context.Context, key, ver, token string, v T, d time.Duration, err error, st *stale[T], mark func()) (T, outcome, error) {
	out := validAll
	switch {
	case err == nil:
		mark()
		out = e.store(ctx, key, ver, token, v, true, d)
	case errors.Is(err, ErrNotFound) && e.p.NullTTL > 0:
		mark()
		out = e.store(ctx, key, ver, token, v, false, d)
	case errors.Is(err, ErrNotFound):
		if token != "" {
			e.releaseLease(ctx, key, token)
		}
		mark()
		out = e.verify(ctx, key, ver)
	default:
		if token != "" {
			e.releaseLease(ctx, key, token)
		}
	}
	v, err = e.result(v, err, st)
	return v, out, err
}

// verify checks that id's version is still ver, for a load whose result
// was not stored: validMarked if so, validLeader otherwise.
func (e *Entity[T]) verify(ctx context.Context, key, ver string) outcome {
	cur, err := e.c.client.Get(ctx, key+":ver").Result()
	if err != nil {
		if failed, _ := e.c.redisErr(ctx, err); failed {
			e.ctr.inc(EventCacheError)
		}
		return validLeader
	}
	e.c.br.success()
	if cur != ver {
		return validLeader
	}
	return validMarked
}

// store writes the entry with fill.lua, which refuses it if the version
// changed. It runs on a detached context: the load is done, and the lease
// must be released even if the caller has gone.
func (e *Entity[T]) store(ctx context.Context, key, ver, token string, v T, found bool, d time.Duration) outcome {
	entry, px, err := e.makeEntry(v, found, d)
	if err != nil {
		e.ctr.inc(EventCacheError)
		if token != "" {
			e.releaseLease(ctx, key, token)
		}
		return e.verify(ctx, key, ver)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.writeTimeout)
	defer cancel()
	channel := ""
	if token != "" {
		channel = e.c.channel
	}
	n, err := fillScript.Run(wctx, e.c.client, []string{key, key + ":ver", key + ":lock"},
		ver, entry, px, e.verPX, token, channel).Int()
	if err != nil {
		if failed, _ := e.c.redisErr(wctx, err); failed {
			e.ctr.inc(EventCacheError)
		}
		return validLeader
	}
	e.c.br.success()
	if n == 0 {
		e.ctr.inc(EventRejectedSet)
		return validLeader
	}
	return validMarked
}

// releaseLease gives up the lease and wakes the waiters.
func (e *Entity[T]) releaseLease(ctx context.Context, key, token string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.writeTimeout)
	defer cancel()
	err := releaseScript.Run(wctx, e.c.client, []string{key + ":lock"}, token, e.c.channel, key).Err()
	if err != nil {
		if failed, _ := e.c.redisErr(wctx, err); failed {
			e.ctr.inc(EventCacheError)
		}
		return
	}
	e.c.br.success()
}

// releaseLeases gives up several leases (keyList are entry keys) in one
// pipeline and wakes their waiters.
func (e *Entity[T]) releaseLeases(ctx context.Context, keyList, tokens []string) {
	switch len(keyList) {
	case 0:
		return
	case 1:
		e.releaseLease(ctx, keyList[0], tokens[0])
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.writeTimeout)
	defer cancel()
	calls := make([]scriptCall, len(keyList))
	for i, k := range keyList {
		calls[i] = scriptCall{keys: []string{k + ":lock"}, args: []any{tokens[i], e.c.channel, k}}
	}
	if err := runScripts(wctx, e.c.client, releaseScript, calls); err != nil {
		if failed, _ := e.c.redisErr(wctx, err); failed {
			e.ctr.inc(EventCacheError)
		}
		return
	}
	e.c.br.success()
}

// makeEntry encodes v (or a "not found") with a jittered TTL. It returns
// the entry and its Redis TTL in ms (the logical TTL plus Grace).
func (e *Entity[T]) makeEntry(v T, found bool, d time.Duration) ([]byte, int64, error) {
	now := time.Now()
	if !found {
		ttl := e.jitter(e.p.NullTTL)
		return encodeEntry(header{null: true, expiry: now.Add(ttl).UnixMilli(), loadUS: durationUS(d)}, nil), ms(ttl), nil
	}
	payload, err := e.c.codec.Marshal(v)
	if err != nil {
		return nil, 0, fmt.Errorf("cacheaside: encode %s: %w", e.name, err)
	}
	if headerLen+len(payload) > e.c.maxValue {
		return nil, 0, fmt.Errorf("%w: %d bytes, the limit is %d", ErrValueTooLarge, headerLen+len(payload), e.c.maxValue)
	}
	ttl := e.jitter(e.p.TTL)
	return encodeEntry(header{expiry: now.Add(ttl).UnixMilli(), loadUS: durationUS(d)}, payload), ms(ttl + e.p.Grace), nil
}

// jitter returns d spread uniformly over [d·(1−J), d·(1+J)].
func (e *Entity[T]) jitter(d time.Duration) time.Duration {
	if e.p.Jitter == 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + e.p.Jitter*(2*rand.Float64()-1)))
}
