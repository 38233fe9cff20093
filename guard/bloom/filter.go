package bloom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/asidekit/asidekit/internal/keys"
	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/redis/go-redis/v9"
)

// Filter is a Bloom filter stored in Redis bitmaps. It holds no state of
// its own besides its sizing, its counters and, with Options.Source, its
// automatic rebuild, so any number of Filters, in any number of processes,
// may share one filter by name. It is safe for concurrent use.
type Filter struct {
	client redis.UniversalClient
	name   string
	layout layout
	// keys[s] are shard s's meta hash and its two generation buffers.
	keys [][]string

	auto      *auto        // nil without Options.Source
	untrusted atomic.Int64 // keys checked on an untrusted shard (Stats.UntrustedChecks)

	// ignoreTrust turns the completeness rule off, so that a test can show
	// the false negatives it prevents. Set by export_test.go only, before
	// the Filter is used.
	ignoreTrust bool
}

// New returns the filter called name, sized by opts. It does not touch
// Redis: the keys are created by the first Add or Rebuild. Bad options, and
// a nil opts (Capacity and FalsePositiveRate have no default), are an error
// wrapping ErrInvalid. opts is copied.
//
// A new filter is untrusted, and answers "maybe" for every key, until a
// Rebuild (or, with Options.Source, the automatic one) has filled it.
func New(client redis.UniversalClient, name string, opts *Options) (*Filter, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	if opts == nil {
		return nil, fmt.Errorf("%w: nil Options: Capacity and FalsePositiveRate are required", ErrInvalid)
	}
	ns, err := keys.Namespace(opts.Namespace)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	esc, err := keys.Escape(name)
	if err != nil {
		return nil, fmt.Errorf("%w: filter name: %w", ErrInvalid, err)
	}
	l, err := newLayout(*opts)
	if err != nil {
		return nil, err
	}
	a, err := newAuto(*opts, ns+":bf:{"+esc+"}:lease")
	if err != nil {
		return nil, err
	}
	f := &Filter{client: client, name: name, layout: l, keys: make([][]string, l.shards), auto: a}
	for s := range f.keys {
		// ns:bf:{name:s}:meta, ns:bf:{name:s}:0, ns:bf:{name:s}:1 — one
		// hash tag per shard, so a shard's keys share a slot and different
		// shards spread over the Cluster.
		base := ns + ":bf:{" + esc + ":" + strconv.Itoa(s) + "}:"
		f.keys[s] = []string{base + "meta", base + "0", base + "1"}
	}
	return f, nil
}

// Add puts key in the filter: one script call, one round trip.
func (f *Filter) Add(ctx context.Context, key string) error {
	_, err := f.one(ctx, addScript, f.lead(), key)
	return err
}

// AddMany puts every key in the filter. Keys are grouped by shard and sent
// as pipelined script calls, up to 8192 keys per round trip. On error some
// keys may have been added; adding again is harmless.
//
// Add and AddMany never make a filter trusted, however many keys they
// add: only a Rebuild, which reads a full source, does. Use them for the
// writes of new keys, and Rebuild (or Options.Source) to fill a filter.
func (f *Filter) AddMany(ctx context.Context, keys []string) error {
	return f.batch(ctx, addScript, f.lead(), keys, nil)
}

// MightContain reports whether key may have been added: false is certain,
// true is wrong with about the configured false-positive rate, and always
// true while key's shard is untrusted (see the package doc; Ready tells,
// Stats counts). One script call, one round trip, whatever the generation.
func (f *Filter) MightContain(ctx context.Context, key string) (bool, error) {
	v, err := f.one(ctx, queryScript, f.queryLead(), key)
	if err != nil {
		return false, err
	}
	res, ok := v.([]any)
	if !ok || len(res) != 2 {
		return false, fmt.Errorf("bloom: filter %q: unexpected reply %v", f.name, v)
	}
	var untrusted int
	ans := f.judge(res[0], res[1], &untrusted)
	f.distrusted(untrusted)
	return ans, nil
}

// MightContainMany is MightContain for many keys; result i is the answer
// for keys[i]. Pipelined like AddMany.
func (f *Filter) MightContainMany(ctx context.Context, keys []string) ([]bool, error) {
	out := make([]bool, len(keys))
	var untrusted int
	err := f.batch(ctx, queryScript, f.queryLead(), keys, func(c *call, cmd *redis.Cmd) error {
		res, err := cmd.Slice()
		if err != nil {
			return f.mapScriptError(err)
		}
		if len(res) != 1+len(c.idx) {
			return fmt.Errorf("bloom: filter %q: %d answers for %d keys", f.name, len(res)-1, len(c.idx))
		}
		for j, v := range res[1:] {
			out[c.idx[j]] = f.judge(res[0], v, &untrusted)
		}
		return nil
	})
	f.distrusted(untrusted)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// judge is the one rule of a check: a key whose bits are not all set is
// absent only if its shard is trusted, that is known to hold every key of
// a full source (query.lua reads both in one step). Otherwise the answer
// is "maybe", and counted in *untrusted. testswitch.FilterTrustOff turns
// the rule off for every Filter, as ignoreTrust does for one.
func (f *Filter) judge(trusted, hit any, untrusted *int) bool {
	if trusted == int64(1) || f.ignoreTrust || testswitch.FilterTrustOff.Load() {
		return hit == int64(1)
	}
	*untrusted++
	return true
}

// distrusted records n answers that an untrusted shard turned into
// "maybe", and starts the automatic rebuild if there is one to start.
func (f *Filter) distrusted(n int) {
	if n == 0 {
		return
	}
	f.untrusted.Add(int64(n))
	f.kick()
}

// Ready reports whether every shard of the filter is trusted: known to
// hold every key of a full source, so that its "false" answers are
// certain. A filter is not ready before its first Rebuild, nor after its
// keys in Redis were lost (restart without persistence, FLUSHALL,
// eviction, failover to a replica that lacked them, Delete); meanwhile its
// checks answer "maybe" for the keys of the untrusted shards. With
// Options.Source, a false answer starts the automatic rebuild as a check
// does. One script call per shard, pipelined.
func (f *Filter) Ready(ctx context.Context) (bool, error) {
	ready, err := f.ready(ctx)
	if err == nil && !ready {
		f.kick()
	}
	return ready, err
}

// ready is Ready without starting a rebuild.
func (f *Filter) ready(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	ready := true
	err := f.perShard(ctx, queryScript, f.queryLead(), func(_ int, cmd *redis.Cmd) error {
		res, err := cmd.Slice()
		if err != nil {
			return f.mapScriptError(err)
		}
		if len(res) != 1 {
			return fmt.Errorf("bloom: filter %q: unexpected reply %v", f.name, res)
		}
		ready = ready && res[0] == int64(1)
		return nil
	})
	if err != nil {
		return false, err
	}
	return ready, nil
}

// Delete removes every key of the filter, all generations included. The
// filter is then untrusted: everything reads as "maybe" until a Rebuild
// (with Options.Source, the automatic one a check starts) fills it again.
func (f *Filter) Delete(ctx context.Context) error {
	for start := 0; start < f.layout.shards; start += pipeCalls {
		pipe := f.client.Pipeline()
		for s := start; s < min(start+pipeCalls, f.layout.shards); s++ {
			pipe.Unlink(ctx, f.keys[s]...) // one slot: the keys share a hash tag
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("bloom: delete filter %q: %w", f.name, err)
		}
	}
	return nil
}

// lead is the first arguments of the add script.
func (f *Filter) lead() []any { return []any{f.layout.fingerprint, f.layout.k} }

// queryLead is the first arguments of the query script: add's, then the
// offset of the completeness marker.
func (f *Filter) queryLead() []any {
	return []any{f.layout.fingerprint, f.layout.k, f.layout.shardBits}
}

// one runs the add or query script, with lead first, for a single key.
func (f *Filter) one(ctx context.Context, s *script.Script, lead []any, key string) (any, error) {
	if key == "" {
		return nil, ErrEmptyKey
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var buf [MaxHashFunctions]uint64
	shard, pos := f.layout.locate(key, buf[:0])
	args := make([]any, 0, len(lead)+len(pos))
	args = append(args, lead...)
	for _, p := range pos {
		args = append(args, p)
	}
	v, err := s.Run(ctx, f.client, f.keys[shard], args...).Result()
	if err != nil {
		if errors.Is(err, redis.Nil) { // the scripts always reply; be safe
			return nil, fmt.Errorf("bloom: filter %q: empty reply", f.name)
		}
		return nil, f.mapScriptError(err)
	}
	return v, nil
}
