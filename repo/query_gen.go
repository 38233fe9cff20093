package repo

import (
	"context"

	"github.com/asidekit/asidekit/cacheaside"
)

// allLists is the id of the generation shared by all lists of a query; a
// filter value's id is never it (encodeValues starts with "(").
const allLists = cacheaside.AllLists

// GenerationTTL is the lifetime of a list generation key, renewed by every
// bump (cacheaside.ListGenerationTTL). A generation that expires only
// makes its pages unreachable (the next read starts a new one): it costs a
// load, never a stale list.
const GenerationTTL = cacheaside.ListGenerationTTL

// generations are a query's list generations in Redis
// (cacheaside.ListGenerations): one per filter value and one for all
// lists. Writers bump and patch them with effects (cacheaside.Bump,
// cacheaside.Patch) after their commit, like any invalidation, and a bump
// that fails is retried with it; the effects done are counted in
// lg.Stats.
type generations struct {
	lg *cacheaside.ListGenerations
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
