package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ListGenerationTTL is the lifetime of a list generation key, renewed by
// every bump and patch. A generation that expires only makes its pages
// unreachable (the next Read starts a new one): it costs a load, never a
// stale list.
const ListGenerationTTL = 24 * time.Hour

// maxListPatches is the most patch lines a generation carries; the next
// Patch bumps it instead (a new base: every page cached under it reloads
// once).
const maxListPatches = 32

// ListGenerations are the generation keys of one cached query's lists
// (repo's Query): one key per list, named by an id as an entity's entries
// are, and the operations its readers and writers make on them. A list's
// pages are cached under its current generation (as ids of an Entity); a
// writer bumps the generation after its COMMIT, and the pages cached under
// the old one are unreachable from then on, however many there are.
//
// A generation is a base, "<token>#<n>": a random token, never a counter,
// so that a key lost to eviction or expiry can never bring back an old
// generation's pages, and n counts the bumps since the key began, so that
// a bump that Redis runs twice cannot either (see Bump). Patch appends
// lines under the base, one per write, for readers that can apply them to
// a page instead of reloading it.
//
// Every call goes through the Cache's breaker and counts its failures
// and bypasses under the ListGenerations' name (Observer); Read also
// bypasses Redis while a recovery gate holds reads (see RecoveryGate).
// A direct Bump or Patch that fails returns its error and queues nothing:
// the caller calls it again (the effects Bump and Patch, done by
// Cache.Apply, are retried by the Cache). It is safe for concurrent use.
type ListGenerations struct {
	c      *Cache
	name   string
	prefix string // ns + ":{" + escaped name + ":", as an Entity's
	ctr    *counters

	bumps, fallbacks, patches atomic.Int64 // ListStats: done by effects
}

// AllLists is the id of the generation that every list of a query shares
// (repo's Query reads it with each list's own): a change whose place in
// the lists is unknown bumps it. Its bumps are also counted apart
// (ListStats.Fallbacks).
const AllLists = "*"

// ListStats counts the Bump and Patch effects (Effects) done to a
// ListGenerations' lists in this process; direct calls of Bump and Patch
// are not counted.
type ListStats struct {
	Bumps     int64 // lists bumped: by Bump, or by a Patch that found its generation changed
	Fallbacks int64 // bumps of AllLists, among Bumps
	Patches   int64 // lines appended by Patch and PatchFromLog
}

// Stats returns the counters of the effects done to g's lists.
func (g *ListGenerations) Stats() ListStats {
	return ListStats{Bumps: g.bumps.Load(), Fallbacks: g.fallbacks.Load(), Patches: g.patches.Load()}
}

// Generation is a list's generation as Read returns it.
type Generation struct {
	// Base is the generation's base: what a bump set. A page that a
	// reader patches is cached under it.
	Base string
	// Patches are the lines Patch appended since the base began, oldest
	// first.
	Patches []string
}

// Exact names the whole generation, its base and its patches: the base
// alone, or the base, "." and the number of patches. Patches are only
// appended under a base, so the name tells one value from every other. A
// page that no patch may change is cached under it.
func (g Generation) Exact() string {
	if len(g.Patches) == 0 {
		return g.Base
	}
	return g.Base + "." + strconv.Itoa(len(g.Patches))
}

// NewListGenerations returns the list generations name of c. name is
// escaped into every key as an entity's name is (list id of
// "items.gen.by_grp" is at "ak:{items.gen.by_grp:<id>}"); it may not be
// empty.
func NewListGenerations(c *Cache, name string) (*ListGenerations, error) {
	esc, err := escapedName(c, "list generations name", name)
	if err != nil {
		return nil, err
	}
	return &ListGenerations{
		c:      c,
		name:   name,
		prefix: c.ns + ":{" + esc + ":",
		ctr:    &counters{name: name, observer: c.observer},
	}, nil
}

// Name returns the name the ListGenerations was created with.
func (g *ListGenerations) Name() string { return g.name }

// Key returns the Redis key of list id's generation. An id that cannot be
// part of a key (empty, or longer than 1024 bytes) is an error matching
// ErrInvalidID: no list of it can be cached.
func (g *ListGenerations) Key(id string) (string, error) {
	esc, err := escapeID(id)
	if err != nil {
		return "", err
	}
	return g.prefix + esc + "}", nil
}

// Read returns the current generations of the lists ids, in order,
// starting those that have none (a new base): one round trip, a SET NX
// GET per list, pipelined. It sends nothing and returns an error when an
// id cannot be a key (matching ErrInvalidID), when the breaker is open,
// or while a recovery gate holds reads; the caller then reads past the
// cache, as Get does when Redis fails.
func (g *ListGenerations) Read(ctx context.Context, ids ...string) ([]Generation, error) {
	ks := make([]string, len(ids))
	for i, id := range ids {
		var err error
		if ks[i], err = g.Key(id); err != nil {
			return nil, err
		}
	}
	if g.c.rec.bypass() || !g.c.br.Allow() {
		g.ctr.inc(EventBypass)
		return nil, fmt.Errorf("cacheaside: read list generations of %s: breaker open or recovering", g.name)
	}
	vals := make([]string, len(ks))
	cmds := make([]*redis.StatusCmd, len(ks))
	_, err := g.c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range ks {
			vals[i] = newGenToken()
			cmds[i] = p.SetArgs(ctx, key, vals[i], redis.SetArgs{Mode: "NX", Get: true, TTL: ListGenerationTTL})
		}
		return nil
	})
	if err := g.c.result(ctx, g.ctr, pipeErr(err, cmds)); err != nil {
		return nil, fmt.Errorf("cacheaside: read list generations of %s: %w", g.name, err)
	}
	out := make([]Generation, len(cmds))
	for i, cmd := range cmds {
		if v, err := cmd.Result(); err == nil {
			vals[i] = v // the key's value; redis.Nil: started now, with ours
		}
		out[i] = splitGeneration(vals[i])
	}
	return out, nil
}

// splitGeneration splits a generation value into its base and its patch
// lines.
func splitGeneration(val string) Generation {
	base, rest, found := strings.Cut(val, "\n")
	if !found {
		return Generation{Base: base}
	}
	return Generation{Base: base, Patches: strings.Split(rest, "\n")}
}

// newGenToken returns a new generation token.
func newGenToken() string { return strconv.FormatUint(rand.Uint64(), 36) }

// pipeErr is the error of a pipeline of cmds for the breaker: the first
// command error other than redis.Nil (an absent key), else the
// pipeline's own error when no command carries it (a hook that refused
// the pipeline), else nil.
func pipeErr[C redis.Cmder](err error, cmds []C) error {
	for _, cmd := range cmds {
		if cerr := cmd.Err(); cerr != nil && !errors.Is(cerr, redis.Nil) {
			return cerr
		}
	}
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
