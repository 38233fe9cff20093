package repo

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// allLists is the id of the generation shared by all lists of a query; a
// filter value's id is never it (encodeValues starts with "(").
const allLists = "*"

// GenerationTTL is the lifetime of a list generation key, renewed by every
// bump (cacheaside.ListGenerationTTL). A generation that expires only
// makes its pages unreachable (the next read starts a new one): it costs a
// load, never a stale list.
const GenerationTTL = cacheaside.ListGenerationTTL

// generations are a query's list generations in Redis
// (cacheaside.ListGenerations): one per filter value and one for all
// lists. It is a rowchange.Invalidator: bumps are after-commit work like
// any invalidation, and a bump that fails is retried with it.
type generations struct {
	name string // the query's, for errors
	lg   *cacheaside.ListGenerations

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
	if err := g.lg.Bump(ctx, ids...); err != nil {
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

// generation is what a list read reads of the generations: the one of
// all the query's lists (its exact name), and the one of the lists of its
// filter values.
type generation struct {
	all  string
	list cacheaside.Generation
}

// read returns the current generations of all lists and of the lists of
// where, starting them when absent; one round trip.
func (g *generations) read(ctx context.Context, where string) (generation, error) {
	gs, err := g.lg.Read(ctx, allLists, where)
	if err != nil {
		return generation{}, err
	}
	return generation{all: gs[0].Exact(), list: gs[1]}, nil
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
	seen := p.seen
	if testswitch.PatchCompareOff.Load() {
		now, ok := p.g.lg.Seen(ctx, ids[0])[ids[0]]
		if !ok {
			return fmt.Errorf("repo: patch list generation of %s: its value could not be read", p.g.name)
		}
		seen = now
	}
	patched, err := p.g.lg.Patch(ctx, ids[0], seen, p.line)
	switch {
	case errors.Is(err, cacheaside.ErrInvalidID):
		return nil // a filter value too long for a key is never cached
	case err != nil:
		return fmt.Errorf("repo: patch list generation of %s: %w", p.g.name, err)
	case patched:
		p.g.patches.Add(1)
	default:
		p.g.bumps.Add(1)
	}
	return nil
}
