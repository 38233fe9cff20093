package bloom

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/script"
)

const (
	// windowSize is how many elements are hashed and sent in one pipeline,
	// that is one round trip (one per node on a Cluster). It bounds memory
	// for huge batches.
	windowSize = 8192
	// callSize is the most elements one script call carries: 128·k bit
	// operations, well under a millisecond of server time, so that a big
	// batch never blocks Redis for long.
	callSize = 128
	// pipeCalls is the most per-shard script calls (begin, switch, stats…)
	// sent in one pipeline.
	pipeCalls = 256
)

// call is one script invocation on one shard.
type call struct {
	shard int
	args  []any
	idx   []int // indexes, in the caller's slice, of the elements it carries
}

// exec runs calls of s as one pipeline through the shared runner
// (internal/script): EVALSHA, then EVAL for the calls whose node did not
// have s cached yet. It returns every call's reply, in order, and the
// first error, mapped.
func (f *Filter) exec(ctx context.Context, s *script.Script, calls []call) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 0 {
		return cmds, nil
	}
	batch := make([]script.Call, len(calls))
	for i, c := range calls {
		batch[i] = script.Call{Script: s, Keys: f.keys[c.shard], Args: c.args}
	}
	err := script.RunMany(ctx, f.client, batch)
	for i := range batch {
		cmds[i] = batch[i].Cmd
	}
	return cmds, f.mapScriptError(err)
}

// perShard runs scr once on every shard with the same args, in
// pipelines of pipeCalls. Without done, the first error is returned. With
// done, every reply, failed or not, goes to done, which decides: perShard
// returns the first error done returns.
func (f *Filter) perShard(ctx context.Context, scr *script.Script, args []any, done func(shard int, cmd *redis.Cmd) error) error {
	for start := 0; start < f.layout.shards; start += pipeCalls {
		end := min(start+pipeCalls, f.layout.shards)
		calls := make([]call, 0, end-start)
		for s := start; s < end; s++ {
			calls = append(calls, call{shard: s, args: args})
		}
		cmds, err := f.exec(ctx, scr, calls)
		if done == nil {
			if err != nil {
				return err
			}
			continue
		}
		for i, cmd := range cmds {
			if derr := done(calls[i].shard, cmd); derr != nil {
				return derr
			}
		}
	}
	return nil
}

// checkKeys refuses a batch with an empty element before anything is sent.
func checkKeys(elems []string) error {
	for i, e := range elems {
		if e == "" {
			return fmt.Errorf("%w (element %d of %d)", ErrEmptyKey, i, len(elems))
		}
	}
	return nil
}

// batch hashes elems window by window, groups each window's elements by
// shard into script calls of at most callSize elements (lead args first,
// then k bit offsets per element), runs each window as one pipeline and
// hands every call's reply to done (if not nil).
func (f *Filter) batch(ctx context.Context, scr *script.Script, lead []any, elems []string, done func(c *call, cmd *redis.Cmd) error) error {
	if err := checkKeys(elems); err != nil {
		return err
	}
	k := f.layout.k
	w := min(len(elems), windowSize)
	shardOf := make([]int, w)
	pos := make([]uint64, 0, w*k)
	order := make([]int, 0, w)
	for start := 0; start < len(elems); start += windowSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		win := elems[start:min(start+windowSize, len(elems))]
		pos = pos[:0]
		order = order[:0]
		for i, e := range win {
			shardOf[i], pos = f.layout.locate(e, pos)
			order = append(order, i)
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(shardOf[a], shardOf[b]) })

		var calls []call
		for j := 0; j < len(order); {
			s := shardOf[order[j]]
			end := j
			for end < len(order) && shardOf[order[end]] == s && end-j < callSize {
				end++
			}
			c := call{shard: s, args: make([]any, 0, len(lead)+(end-j)*k), idx: make([]int, 0, end-j)}
			c.args = append(c.args, lead...)
			for _, i := range order[j:end] {
				c.idx = append(c.idx, start+i)
				for _, p := range pos[i*k : (i+1)*k] {
					c.args = append(c.args, p)
				}
			}
			calls = append(calls, c)
			j = end
		}

		cmds, err := f.exec(ctx, scr, calls)
		if err != nil {
			return err
		}
		if done != nil {
			for i := range calls {
				if err := done(&calls[i], cmds[i]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
