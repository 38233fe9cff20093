package inspect

import (
	"context"
	"time"
)

// Walk is one source of items: each call takes up to a batch of them
// (judging each with Judge, or Count, or Suspect) and reports whether the
// walk is done. It checks Over before each item.
type Walk func(ctx context.Context) (done bool, err error)

// Chain returns a walk that runs walks one after the other, each to its
// end: all the items of one source before the next's (Do alone takes a
// batch of each in turn).
func Chain(walks ...Walk) Walk {
	return func(ctx context.Context) (bool, error) {
		if len(walks) == 0 {
			return true, nil
		}
		done, err := walks[0](ctx)
		if done {
			walks = walks[1:]
		}
		return len(walks) == 0, err
	}
}

// Entries are one cache entity's entries, to walk with WalkEntries.
type Entries struct {
	// Sample lists up to count more ids that have an entry (a page of
	// cacheaside.Entity.SampleIDs, the cursor kept by the caller) and
	// whether the walk is done; its error ends the run as it is.
	Sample func(ctx context.Context, count int) (ids []string, done bool, err error)
	// Look judges the entry of id now.
	Look LookFunc
	// Repair fixes the entry of id (invalidates it).
	Repair func(ctx context.Context, id string) error
}

// WalkEntries returns the walk of e's entries: one SampleIDs page a batch,
// each id judged with Judge.
func (r *Run) WalkEntries(e Entries) Walk {
	return func(ctx context.Context) (bool, error) {
		ids, done, err := e.Sample(ctx, r.o.SampleSize)
		if err != nil {
			return false, err
		}
		for _, id := range ids {
			if r.Over() {
				return false, nil
			}
			if err := r.Judge(ctx, id, e.Look, func(ctx context.Context) error { return e.Repair(ctx, id) }); err != nil {
				return false, err
			}
		}
		return done, nil
	}
}

// Judge looks at the item id and counts it, or makes it a suspect whose
// second look, with the same look, must see the same entry (SameEntry)
// disagree the same way.
func (r *Run) Judge(ctx context.Context, id string, look LookFunc, repair RepairFunc) error {
	first, err := look(ctx, id)
	switch {
	case err != nil:
		return err
	case first.Kind == Skip || first.Kind == Consistent:
		r.Count(first.Kind)
		return nil
	case !secondLook():
		r.count(func(s *Stats) { s.Suspects++ })
		r.violation(ctx, first, repair)
	default:
		r.suspect(first, func(ctx context.Context) (Look, error) {
			second, err := look(ctx, id)
			if err == nil && !SameEntry(first.Entry, second.Entry) {
				second.Kind = Consistent // replaced or invalidated since: in flight
			}
			return second, err
		}, repair)
	}
	r.progress()
	return nil
}

// Suspect queues an item a first look (first) found disagreeing, for a
// second look (again) Grace from now: the item is a violation if again
// returns first's Kind, consistent otherwise. It is for a walk whose items
// are looked at otherwise than one by one with a LookFunc (a Bloom filter
// asked about a page of ids).
func (r *Run) Suspect(first Look, again func(ctx context.Context) (Look, error), repair RepairFunc) {
	r.suspect(first, again, repair)
	r.progress()
}

func (r *Run) suspect(first Look, again func(ctx context.Context) (Look, error), repair RepairFunc) {
	r.suspects = append(r.suspects, suspect{due: time.Now().Add(r.o.Grace), first: first, again: again, repair: repair})
	r.count(func(s *Stats) { s.Suspects++ })
}

// Count counts an item taken without a suspect: Consistent, or Skip.
func (r *Run) Count(k Kind) {
	if k == Skip {
		r.count(func(s *Stats) { s.Skipped++ })
	} else {
		r.judged(k)
	}
	r.progress()
}

func (r *Run) progress() {
	if r.o.Progress != nil {
		r.o.Progress(Progress{Stats: r.rep.Stats, Pending: len(r.suspects)})
	}
}
