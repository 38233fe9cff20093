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

	bumps, fallbacks, patches atomic.Int64
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

// generation is what a list read reads of the generations: the token of
// all the query's lists, and the base and patch lines of the lists of its
// filter values (splitGeneration).
type generation struct {
	all, base string
	patches   []string
}

// exact names the generation with its patches: the id part of an entry
// that no patch may change (a count, an offset page, a page that cannot
// be patched). Patches are only appended under a base, so the base and
// their number name one value.
func (g generation) exact() string {
	if len(g.patches) == 0 {
		return g.base
	}
	return g.base + "." + strconv.Itoa(len(g.patches))
}

// read returns the current generations of all lists and of the lists of
// where, starting them when absent; one round trip (SET NX GET, pipelined).
func (g *generations) read(ctx context.Context, where string) (generation, error) {
	var gen generation
	allKey, err := g.keys.Key(allLists)
	if err != nil {
		return gen, err
	}
	valKey, err := g.keys.Key(where)
	if err != nil {
		return gen, err
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
		return gen, err
	}
	for i, c := range cmds {
		switch v, err := c.Result(); {
		case errors.Is(err, redis.Nil): // started now, with our token
		case err != nil:
			return gen, err
		default:
			tokens[i] = v
		}
	}
	gen.all = tokens[0]
	gen.base, gen.patches = splitGeneration(tokens[1])
	return gen, nil
}

func newToken() string { return strconv.FormatUint(rand.Uint64(), 36) }

// bumpScript sets a generation key to a new generation: the token
// ARGV[1], "#", and one more than the count after the "#" of the key's
// current value (0 when absent or without one). The same bump applied
// twice (go-redis sends a command again when its first reply was lost,
// though the first one ran) thus yields two generations, never the first
// one again after another writer's bump replaced it, which would make the
// pages filled under it before that writer's commit current again. The
// count's match goes through a local (here and in patchScript): on
// gopher-lua (miniredis) a failed string.match returns no value, and
// tonumber() of no value is an error where Redis' Lua passes nil.
const bumpScript = `
local cur = redis.call('GET', KEYS[1])
local n = 0
if cur then
	local count = string.match(cur, '^[^\n]*#(%d+)')
	n = tonumber(count) or 0
end
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

// patchScript appends the patch line ARGV[1] to the generation key
// KEYS[1] if it still holds ARGV[2], the value its writer read before its
// COMMIT, and that value has fewer than ARGV[5] patches; else it bumps the
// key as bumpScript does, with the token ARGV[3]. It returns 1 when it
// patched. The compare keeps patches in commit order: a write whose
// upkeep comes after a later write's finds the value changed, and bumps.
const patchScript = `
local cur = redis.call('GET', KEYS[1])
if cur and cur == ARGV[2] then
	local _, k = string.gsub(cur, '\n', '')
	if k < tonumber(ARGV[5]) then
		redis.call('SET', KEYS[1], cur .. '\n' .. ARGV[1], 'PX', ARGV[4])
		return 1
	end
end
local n = 0
if cur then
	local count = string.match(cur, '^[^\n]*#(%d+)')
	n = tonumber(count) or 0
end
redis.call('SET', KEYS[1], ARGV[3] .. '#' .. (n + 1), 'PX', ARGV[4])
return 0`

var patchLua = redis.NewScript(patchScript)

// seen reads the generations of the lists of wheres, for a write's
// patches: one round trip (a pipelined GET each). A list whose
// generation could not be read is left out; its write bumps it.
func (g *generations) seen(ctx context.Context, wheres []string) map[string]string {
	cmds := make(map[string]*redis.StringCmd, len(wheres))
	_, _ = g.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, w := range wheres {
			if key, err := g.keys.Key(w); err == nil {
				cmds[w] = p.Get(ctx, key)
			}
		}
		return nil
	})
	out := make(map[string]string, len(cmds))
	for w, c := range cmds {
		switch v, err := c.Result(); {
		case err == nil:
			out[w] = v
		case errors.Is(err, redis.Nil):
			out[w] = "" // no generation: the patch bumps, starting one
		}
	}
	return out
}

// patcher is one write's patch of one list, an after-commit invalidation
// (rowchange.Invalidator) of its own: it patches the list whose
// generation is still seen, else bumps it. Run again (a retry after a
// lost reply), it finds the generation changed, and bumps.
type patcher struct {
	g          *generations
	seen, line string
}

func (p *patcher) Name() string { return p.g.name }

// Invalidate patches (or bumps) the list ids[0].
func (p *patcher) Invalidate(ctx context.Context, ids ...string) error {
	if len(ids) == 0 || testswitch.ListBumpsOff.Load() {
		return nil
	}
	key, err := p.g.keys.Key(ids[0])
	if err != nil {
		return nil // a filter value too long for a key is never cached
	}
	seen := p.seen
	if testswitch.PatchCompareOff.Load() {
		if seen, err = p.g.client.Get(ctx, key).Result(); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("repo: patch list generation of %s: %w", p.g.name, err)
		}
	}
	n, err := patchLua.Run(ctx, p.g.client, []string{key}, p.line, seen, newToken(),
		GenerationTTL.Milliseconds(), maxPatches).Int()
	if err != nil {
		return fmt.Errorf("repo: patch list generation of %s: %w", p.g.name, err)
	}
	if n == 1 {
		p.g.patches.Add(1)
	} else {
		p.g.bumps.Add(1)
	}
	return nil
}
