package repo

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"reflect"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/inspect"
)

// inspection is one run of Inspect: the typed looks that internal/inspect
// runs. It is used by one goroutine.
type inspection[T any, ID comparable] struct {
	r   *Repository[T, ID]
	o   InspectOptions
	dec func(string) (ID, error)
	run *inspect.Run
}

// walks are the sources of the run: the rows' entries, each mapping's,
// and the table's ids against the Bloom filter.
func (in *inspection[T, ID]) walks() []inspect.Walk {
	walks := []inspect.Walk{entryWalk(in, in.r.c.ent, in.lookRow)}
	for _, l := range in.r.c.lookups {
		walks = append(walks, entryWalk(in, l.ent, func(ctx context.Context, key string) (inspect.Look, error) {
			return in.lookMapping(ctx, l, key)
		}))
	}
	if in.r.c.filter != nil {
		walks = append(walks, in.filterWalk())
	}
	return walks
}

// entryWalk walks ent's cached entries, judging each with look; a repair
// invalidates the entry (an invalidation left to the Cache's retrier
// counts as done).
func entryWalk[V any, T any, ID comparable](in *inspection[T, ID], ent *cacheaside.Entity[V], look inspect.LookFunc) inspect.Walk {
	var cur cacheaside.Cursor
	return in.run.WalkEntries(inspect.Entries{
		Sample: func(ctx context.Context, n int) ([]string, bool, error) {
			ids, next, err := ent.SampleIDs(ctx, cur, n)
			if err != nil {
				return nil, false, fmt.Errorf("repo: %s: inspect: %w", in.r.c.name, err)
			}
			cur = next
			return ids, cur.Done(), nil
		},
		Look: look,
		Repair: func(ctx context.Context, id string) error {
			if err := ent.Invalidate(ctx, id); !errors.Is(err, cacheaside.ErrInvalidationPending) {
				return err
			}
			return nil
		},
	})
}

// inspectReport is the report of rep, a run of entity's.
func inspectReport(entity string, rep inspect.Report) InspectReport {
	out := InspectReport{InspectStats: inspectStats(rep.Stats), Entity: entity, Complete: rep.Complete, Elapsed: rep.Elapsed}
	for _, f := range rep.Found {
		out.Found = append(out.Found, Violation{Kind: InspectKind(f.Kind), Entity: f.Entity, Key: f.Entry.Key, ID: f.ID,
			Version: f.Entry.Version, Cached: f.Cached, Stored: f.Stored, Repaired: f.Repaired})
	}
	return out
}

// inspectStats are the counts of s (whose Corrupt, which repo's looks
// never report, is left out).
func inspectStats(s inspect.Stats) InspectStats {
	return InspectStats{Runs: s.Runs, Inspected: s.Inspected, Consistent: s.Consistent,
		Stale: s.Stale, Ghost: s.Ghost, FalseNotFound: s.FalseNotFound, DivergentMapping: s.DivergentMapping,
		Suspects: s.Suspects, Skipped: s.Skipped, Repaired: s.Repaired}
}

// inspectDecoder returns the inverse of ID's cache id codec, or nil.
func inspectDecoder[ID comparable]() func(string) (ID, error) {
	if dec := newIDDecoder[ID](); dec != nil {
		return dec
	}
	if reflect.PointerTo(reflect.TypeFor[ID]()).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return func(s string) (ID, error) {
			var id ID
			err := any(&id).(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
			return id, err
		}
	}
	return nil
}
