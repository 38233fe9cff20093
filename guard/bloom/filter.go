package bloom

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/asidekit/asidekit/internal/keys"
	"github.com/asidekit/asidekit/internal/script"
	"github.com/redis/go-redis/v9"
)

// Filter is a Bloom filter stored in Redis bitmaps. It holds no state of
// its own besides its sizing, so any number of Filters, in any number of
// processes, may share one filter by name. It is safe for concurrent use.
type Filter struct {
	client redis.UniversalClient
	name   string
	layout layout
	// keys[s] are shard s's meta hash and its two generation buffers.
	keys [][]string
}

// New returns the filter called name, sized by opts. It does not touch
// Redis: the keys are created by the first Add. Bad options, and a nil opts
// (Capacity and FalsePositiveRate have no default), are an error wrapping
// ErrInvalidOptions. opts is copied.
func New(client redis.UniversalClient, name string, opts *Options) (*Filter, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidOptions)
	}
	if opts == nil {
		return nil, fmt.Errorf("%w: nil Options: Capacity and FalsePositiveRate are required", ErrInvalidOptions)
	}
	ns, err := keys.Namespace(opts.Namespace)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	esc, err := keys.Escape(name)
	if err != nil {
		return nil, fmt.Errorf("%w: filter name: %w", ErrInvalidOptions, err)
	}
	l, err := newLayout(*opts)
	if err != nil {
		return nil, err
	}
	f := &Filter{client: client, name: name, layout: l, keys: make([][]string, l.shards)}
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
	_, err := f.one(ctx, addScript, key)
	return err
}

// AddMany puts every key in the filter. Keys are grouped by shard and sent
// as pipelined script calls, up to 8192 keys per round trip. On error some
// keys may have been added; adding again is harmless.
func (f *Filter) AddMany(ctx context.Context, keys []string) error {
	return f.batch(ctx, addScript, f.lead(), keys, nil)
}

// MightContain reports whether key may have been added: false is certain,
// true is wrong with about the configured false-positive rate. One script
// call, one round trip, whatever the generation.
func (f *Filter) MightContain(ctx context.Context, key string) (bool, error) {
	v, err := f.one(ctx, queryScript, key)
	if err != nil {
		return false, err
	}
	res, ok := v.([]any)
	if !ok || len(res) != 1 {
		return false, fmt.Errorf("bloom: filter %q: unexpected reply %v", f.name, v)
	}
	return res[0] == int64(1), nil
}

// MightContainMany is MightContain for many keys; result i is the answer
// for keys[i]. Pipelined like AddMany.
func (f *Filter) MightContainMany(ctx context.Context, keys []string) ([]bool, error) {
	out := make([]bool, len(keys))
	err := f.batch(ctx, queryScript, f.lead(), keys, func(c *call, cmd *redis.Cmd) error {
		res, err := cmd.Slice()
		if err != nil {
			return f.mapScriptError(err)
		}
		if len(res) != len(c.idx) {
			return fmt.Errorf("bloom: filter %q: %d answers for %d keys", f.name, len(res), len(c.idx))
		}
		for j, v := range res {
			out[c.idx[j]] = v == int64(1)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes every key of the filter, all generations included. Until
// keys are added again, everything reads as absent.
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

// lead is the first arguments of the add and query scripts.
func (f *Filter) lead() []any { return []any{f.layout.fingerprint, f.layout.k} }

// one runs the add or query script for a single key.
func (f *Filter) one(ctx context.Context, s *script.Script, key string) (any, error) {
	if key == "" {
		return nil, ErrEmptyKey
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var buf [MaxHashFunctions]uint64
	shard, pos := f.layout.locate(key, buf[:0])
	args := make([]any, 0, 2+len(pos))
	args = append(args, f.layout.fingerprint, f.layout.k)
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
