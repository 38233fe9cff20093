package cacheaside

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

// item is one id being rebuilt: its id and entry key, the version token
// read before its load, the rebuild lease held for it ("" for none), and
// the version to store with its value ("" to keep ver; see
// requirement.upgrade).
type item struct{ id, key, ver, token, up string }

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
	if v, err, ok = e.classify(entry, 0).current(); !ok {
		e.corrupt(ctx, key)
	}
	return v, err, ok
}

// fill.lua's reply: bits of the integer it returns.
const (
	fillStored    = 1 // the entry was stored (else refused: the version changed)
	fillLeaseLost = 2 // the caller's lease was no longer its own
	fillEpoch     = 4 // refused: the epoch marker changed (see settle.go)
)

// filled counts the reply n of call, a fill.lua call (see fillCall): a
// refused store, a lost lease, a changed epoch marker (the Cache then
// settles). It reports whether the entry was stored.
func (e *Entity[T]) filled(ctx context.Context, call *script.Call, n int) bool {
	key := call.Keys[0]
	if n&fillLeaseLost != 0 {
		e.leaseLost(key)
	}
	if n&fillEpoch != 0 {
		e.ctr.settled.Add(1)
		e.rejectedSet(key, rejectedEpoch)
		e.c.settle.changed(ctx, call.Args[fillArgEpoch].(string))
		return false
	}
	if n&fillStored == 0 {
		e.rejectedSet(key, rejectedVersion)
		return false
	}
	return true
}

// leaseLost counts a rebuild lease of the entry key found lost.
func (e *Entity[T]) leaseLost(key string) {
	e.ctr.inc(EventLeaseLost)
	if h := leaseLostHook.Load(); h != nil {
		(*h)(key)
	}
}

// leaseLostHook, when set (by tests), is called with the entry key of
// every lease counted lost.
var leaseLostHook atomic.Pointer[func(key string)]

// Why a store after a load was refused (EventRejectedSet).
const (
	rejectedVersion  = "version"  // fill.lua: the id's version changed since the load began
	rejectedEpoch    = "epoch"    // fill.lua: the epoch marker changed (see settle.go)
	rejectedSettling = "settling" // not sent: the Cache settles (see settle.go)
)

// rejectedSet counts a store of the entry key refused for reason.
func (e *Entity[T]) rejectedSet(key, reason string) {
	e.ctr.inc(EventRejectedSet)
	if h := rejectedSetHook.Load(); h != nil {
		(*h)(key, reason)
	}
}

// rejectedSetHook, when set (by tests), is called with the entry key and
// the reason of every store counted refused.
var rejectedSetHook atomic.Pointer[func(key, reason string)]

// fillArgEpoch is the index in a fillCall's Args of the epoch marker's
// value (fill.lua's ARGV[9]), present when its Keys name the marker.
const fillArgEpoch = 8

// maxAnnounced is the largest entry that fill.lua sends to the waiters
// with its announcement, sparing them a round trip to read it.
const maxAnnounced = 4 << 10

// fillCall is the fill.lua call that stores entry (Redis TTL px ms) for
// it: version-checked (and, on a single node, checked against the epoch
// marker whose value marker is, see settle.go), releasing its lease and
// waking the waiters when it holds one (with the entry itself when it is
// small). Its first key is it.key; pass its reply to filled.
func (e *Entity[T]) fillCall(it item, entry []byte, px int64, marker string, epoch any) script.Call {
	channel, announce := "", "0"
	if it.token != "" {
		channel = e.c.channel
		if len(entry) <= maxAnnounced {
			announce = "1"
		}
	}
	keys := append(make([]string, 0, 4), it.key, it.key+":ver", it.key+":lock")
	args := append(make([]any, 0, 9), it.ver, entry, px, e.verPX, it.token, channel, announce, it.up)
	if marker != "" {
		keys = append(keys, marker)
		args = append(args, epoch)
	}
	return script.Call{Script: fillScript, Keys: keys, Args: args}
}

// settling reports whether the Cache settles (see settle.go), counting
// one read or store of e that it changed.
func (e *Entity[T]) settling() bool {
	if !e.c.settle.active() {
		return false
	}
	e.ctr.settled.Add(1)
	return true
}

// releaseLeases gives up the leases of items (those without a lease are
// skipped) in one round trip and wakes their waiters. A lease that was no
// longer this caller's is counted lost.
func (e *Entity[T]) releaseLeases(ctx context.Context, items []item) {
	calls := make([]script.Call, 0, len(items))
	for _, it := range items {
		if it.token != "" {
			calls = append(calls, script.Call{Script: releaseScript, Keys: []string{it.key + ":lock"}, Args: []any{it.token, e.c.channel, it.key}})
		}
	}
	if len(calls) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.writeTimeout)
	defer cancel()
	e.note(wctx, script.RunMany(wctx, e.c.client, calls))
	for i := range calls {
		if n, err := calls[i].Cmd.Int(); err == nil && n == 0 {
			e.leaseLost(calls[i].Args[2].(string))
		}
	}
}

// releaseUnlessReturned is deferred around a loader call made under the
// leases of items: unless *returned was set after the call, the loader
// called runtime.Goexit (t.FailNow in a test, for example), and the leases
// are given up as after a failed load, which wakes their waiters instead
// of leaving them to wait for LockTTL.
func (e *Entity[T]) releaseUnlessReturned(ctx context.Context, items []item, returned *bool) {
	if !*returned {
		e.releaseLeases(ctx, items)
	}
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
