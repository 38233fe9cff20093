package limit

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

var (
	//go:embed peek.lua
	peekLua    string
	peekScript = script.New(peekLua)
)

// algorithms are the state key prefixes of the limiters (see "Keys" in the
// package doc), in the order Peek reports them.
var algorithms = []string{"fw", "sl", "sw", "gcra", "fun", "cc"}

// State is what Redis holds for one key of one limiter algorithm.
type State struct {
	// Algorithm is the key's algorithm: fw (fixed window, with or without
	// lockout), sl (sliding log), sw (sliding window), gcra, fun (funnel)
	// or cc (concurrency).
	Algorithm string
	// Key is the Redis key, e.g. "ak:rl:{gcra:user:7}".
	Key string
	// Type is the Redis type of the key: "hash", "string" or "zset".
	Type string
	// TTL is the key's remaining time to live, -1 without one: when the
	// state resets if no call comes.
	TTL time.Duration
	// Fields are a hash's fields (a string's value is under ""): the
	// algorithm's own counters and times, as its script stores them.
	Fields map[string]string
	// Members is a sorted set's size: the calls in a sliding log, the
	// leases held by a concurrency limiter.
	Members int64
}

// Peek returns the state Redis holds for key under every limiter algorithm
// that has one, in opts' namespace (nil: the default), with no side effect:
// nothing is counted, no lease taken or released, no TTL changed. It costs
// one round trip per algorithm. An unusable key or namespace is ErrInvalid;
// Redis's errors are returned as they are (no breaker, no fail-open).
func Peek(ctx context.Context, client Client, key string, opts *Options) ([]State, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalid)
	}
	o, err := opts.init()
	if err != nil {
		return nil, err
	}
	var out []State
	for _, algo := range algorithms {
		k, err := stateKey(o.Namespace, algo, key)
		if err != nil {
			return nil, err
		}
		res, err := peekScript.Run(ctx, client, []string{k}).Slice()
		if err != nil {
			return nil, fmt.Errorf("limit: peek %s: %w", k, err)
		}
		if len(res) != 3 {
			return nil, fmt.Errorf("limit: peek.lua returned %d values, want 3", len(res))
		}
		typ, _ := res[0].(string)
		if typ == "none" {
			continue
		}
		st := State{Algorithm: algo, Key: k, Type: typ}
		if ms, _ := res[1].(int64); ms >= 0 {
			st.TTL = time.Duration(ms) * time.Millisecond
		} else {
			st.TTL = -1
		}
		switch c := res[2].(type) {
		case []any:
			st.Fields = make(map[string]string, len(c)/2)
			for i := 0; i+1 < len(c); i += 2 {
				f, _ := c[i].(string)
				v, _ := c[i+1].(string)
				st.Fields[f] = v
			}
		case string:
			st.Fields = map[string]string{"": c}
		case int64:
			st.Members = c
		}
		out = append(out, st)
	}
	return out, nil
}
