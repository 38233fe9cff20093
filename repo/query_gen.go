package repo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// allLists is the id of the generation shared by all lists of a query; a
// filter value's id is never it (encodeValues starts with "(").
const allLists = "*"

// GenerationTTL is the lifetime of a list generation key, renewed by every
// bump. A generation that expires only makes its pages unreachable (the
// next read starts a new one): it costs a load, never a stale list.
const GenerationTTL = 24 * time.Hour

// generations are a query's generation keys in Redis: one per filter value
// and one for all lists. A generation is a random token, not a counter, so
// that a key lost to eviction or expiry can never bring back an old
// generation's pages; a bump appends the count of bumps since the key
// began (bumpScript), so that one applied twice cannot either. It is a
// rowchange.Invalidator: bumps are after-commit work like any
// invalidation.
type generations struct {
	name   string
	client redis.UniversalClient
	keys   *cacheaside.Entity[struct{}] // names the keys; never read through

	bumps, fallbacks atomic.Int64
}

// Name returns the query's name, for errors.
func (g *generations) Name() string { return g.name }

// Invalidate bumps the generations of ids (filter values, or allLists):
// pages filled under the old ones are unreachable from then on.
func (g *generations) Invalidate(ctx context.Context, ids ...string) error {
	if len(ids) == 0 || testswitch.ListBumpsOff.Load() {
		return nil
	}
	_, err := g.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			key, err := g.keys.Key(id)
			if err != nil {
				continue // a filter value too long for a key is never cached
			}
			bump(ctx, p, key, newToken())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("repo: bump list generations of %s: %w", g.name, err)
	}
	for _, id := range ids {
		g.bumps.Add(1)
		if id == allLists {
			g.fallbacks.Add(1)
		}
	}
	return nil
}

// read returns the current generations of all lists and of the lists of
// where, starting them when absent; one round trip (SET NX GET, pipelined).
func (g *generations) read(ctx context.Context, where string) (all, val string, err error) {
	allKey, err := g.keys.Key(allLists)
	if err != nil {
		return "", "", err
	}
	valKey, err := g.keys.Key(where)
	if err != nil {
		return "", "", err
	}
	tokens := [2]string{newToken(), newToken()}
	var cmds [2]*redis.StatusCmd
	_, err = g.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range [2]string{allKey, valKey} {
			cmds[i] = p.SetArgs(ctx, key, tokens[i], redis.SetArgs{Mode: "NX", Get: true, TTL: GenerationTTL})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", "", err
	}
	for i, c := range cmds {
		switch v, err := c.Result(); {
		case errors.Is(err, redis.Nil): // started now, with our token
		case err != nil:
			return "", "", err
		default:
			tokens[i] = v
		}
	}
	return tokens[0], tokens[1], nil
}

func newToken() string { return strconv.FormatUint(rand.Uint64(), 36) }

// bumpScript sets a generation key to a new generation: the token
// ARGV[1], "#", and one more than the count after the "#" of the key's
// current value (0 when absent or without one). The same bump applied
// twice (go-redis sends a command again when its first reply was lost,
// though the first one ran) thus yields two generations, never the first
// one again after another writer's bump replaced it, which would make the
// pages filled under it before that writer's commit current again.
const bumpScript = `
local cur = redis.call('GET', KEYS[1])
local n = 0
if cur then n = tonumber(string.match(cur, '#(%d+)$')) or 0 end
redis.call('SET', KEYS[1], ARGV[1] .. '#' .. (n + 1), 'PX', ARGV[2])
return 1`

// bump queues on p the bump of the generation key key with token.
func bump(ctx context.Context, p redis.Pipeliner, key, token string) {
	if testswitch.GenCounterOff.Load() {
		p.Set(ctx, key, token, GenerationTTL)
		return
	}
	p.Eval(ctx, bumpScript, []string{key}, token, GenerationTTL.Milliseconds())
}
