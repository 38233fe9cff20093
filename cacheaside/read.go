package cacheaside

import (
	"context"
	"errors"
	"fmt"

	"github.com/asidekit/asidekit/internal/keys"
)

// Get returns id's value: from Redis on a hit (one round trip), otherwise
// from load, as the Policy's strategy directs, storing the result. load
// returns ErrNotFound (or an error wrapping it) when id does not exist; Get
// then returns ErrNotFound, and the absence is cached for NullTTL.
//
// A value Get returns is never older than a write (source of truth, then
// Invalidate or Set) that completed before Get began, except for stale
// values within Grace that the Policy allows (AsyncRefresh, or a failing
// loader).
//
// When Redis fails (or the breaker is open) Get calls load directly,
// within MaxConcurrentLoads, and stores nothing; concurrent Gets of id in
// this process share such loads by group commit (a Get never takes the
// result of a load that began before it). Every wait honours ctx.
//
// A hit is the gate (gate.go: the checks before Redis, shared with
// GetMany; one atomic load while all is well), then four functions:
// commitGroup.do (coalesce.go), which shares the GET with the concurrent
// Gets of id in this process by group commit; fetch, the GET itself
// (below); classifyFetched (classify.go), what the entry holds; and
// decide (below), what the read does with it.
// Beside them are leaf calls only: keys.Escape, redisResult
// (failopen.go), the counters. A miss goes on in rebuild.go.
func (e *Entity[T]) Get(ctx context.Context, id string, load Loader[T]) (T, error) {
	var zero T
	esc, err := keys.Escape(id) // escapeID, inlined on the hit path
	if err != nil {
		return zero, fmt.Errorf("%w: %w", ErrInvalidID, err)
	}
	if load == nil {
		return zero, errNilLoader
	}
	var key string // built by the gate, when needed
	for attempt := 0; ; attempt++ {
		g := readGate[T]{e: e}
		via, tk, err := g.pass(&key, esc)
		if via == toLocal {
			return g.v, err
		}
		r := request[T]{item: item{id: id, key: key}, load: load}
		if via != toRedis { // toHeld, toLoader
			e.ctr.inc(EventBypass)
			return e.failOpen(ctx, r)
		}
		f, err := e.reads.do(ctx, key, e.getEntry)
		if err = e.redisResult(ctx, err); err != nil {
			if errors.Is(err, errFailOpen) {
				return e.failOpen(ctx, r)
			}
			return zero, err
		}
		vw := e.classifyFetched(f, e.now())
		switch e.decide(ctx, tk, key, &vw) {
		case serveValue:
			return vw.v, nil
		case serveNull:
			return zero, ErrNotFound
		case serveAndRefresh:
			if vw.state == stateDue {
				return e.earlyRefresh(ctx, r, vw.v, vw.hdr), nil
			}
			e.refreshAsync(ctx, r, vw.hdr)
			return vw.v, nil
		}
		// A caller that joined a shared load too late to be covered by its
		// validation starts over, through the gate; the last attempt loads
		// on its own.
		r.stale, r.share = vw.stale(), attempt < maxJoinAttempts
		v, retry, err := e.miss(ctx, r)
		if errors.Is(err, errFailOpen) {
			return e.failOpen(ctx, r)
		}
		if !retry {
			return v, err
		}
	}
}

// fetch is the GET of the hit path: the entry at key, decoded when T is
// copy-safe (see fetched).
func (e *Entity[T]) fetch(ctx context.Context, key string) (fetched[T], error) {
	b, err := e.c.client.Get(ctx, key).Bytes()
	f := fetched[T]{b: b}
	if err != nil || !e.copySafe {
		return f, err
	}
	if h, payload, derr := decodeEntry(b); derr == nil && !h.null {
		f.v, f.decoded = e.decode(payload)
		f.bad = !f.decoded
	}
	return f, nil
}

// maxJoinAttempts bounds how often a Get joins shared loads whose results
// it may not use before it loads on its own.
const maxJoinAttempts = 3

// decision is what a read does with an entry it classified.
type decision int

const (
	serveValue      decision = iota // answer with the value
	serveNull                       // answer ErrNotFound
	serveAndRefresh                 // answer with the value and refresh it: early (stateDue) or in the background (stateStale)
	rebuild                         // a miss: load it (vw.stale() may serve within Grace if the load fails)
)

// decide is the one rule, shared by Get and GetMany, of what a read does
// with the entry it classified: it counts the read, keeps what it serves
// in the near cache (under tk, the ticket taken before the read of key),
// and deletes an entry that does not decode, which is then rebuilt.
func (e *Entity[T]) decide(ctx context.Context, tk ticket, key string, vw *view[T]) decision {
	switch vw.state {
	case stateFresh, stateDue:
		e.ctr.inc(EventHit)
		if e.local != nil {
			e.local.put(tk, key, vw) // near cache
		}
		if vw.state == stateDue {
			return serveAndRefresh
		}
		return serveValue
	case stateStale:
		e.ctr.inc(EventStaleServed)
		return serveAndRefresh
	case stateNull:
		e.ctr.inc(EventNullHit)
		if e.local != nil {
			e.local.putNull(tk, key, vw.expiry) // near cache
		}
		return serveNull
	case stateCorrupt:
		e.corrupt(ctx, key)
	}
	e.ctr.inc(EventMiss)
	return rebuild
}

// corrupt deletes an entry that is not ours (or is damaged) and counts it.
func (e *Entity[T]) corrupt(ctx context.Context, key string) {
	e.ctr.inc(EventDecodeError)
	e.note(ctx, e.c.client.Del(ctx, key).Err())
}
