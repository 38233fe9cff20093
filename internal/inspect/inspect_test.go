package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/asidekit/asidekit/internal/inspect"
)

// store is a fake cache: what a look at each id sees, changed by a look's
// side effect (then), so a test can play an invalidation in flight.
type store struct {
	looks    map[string]inspect.Look
	then     map[string]func() // run after the id's first look
	repaired []string
}

func newStore(looks ...inspect.Look) *store {
	s := &store{looks: map[string]inspect.Look{}, then: map[string]func(){}}
	for _, l := range looks {
		s.looks[l.ID] = l
	}
	return s
}

func (s *store) look(_ context.Context, id string) (inspect.Look, error) {
	l := s.looks[id]
	if f := s.then[id]; f != nil {
		delete(s.then, id)
		f()
	}
	return l, nil
}

// walk judges ids with Judge, one batch.
func (s *store) walk(r *inspect.Run, ids ...string) inspect.Walk {
	return func(ctx context.Context) (bool, error) {
		for _, id := range ids {
			if r.Over() {
				return false, nil
			}
			repair := func(context.Context) error {
				if id == "broken" {
					return errors.New("not repaired")
				}
				s.repaired = append(s.repaired, id)
				return nil
			}
			if err := r.Judge(ctx, id, s.look, repair); err != nil {
				return false, err
			}
		}
		return true, nil
	}
}

func entry(id, version string, k inspect.Kind) inspect.Look {
	return inspect.Look{Kind: k, Entity: "users", ID: id, Entry: inspect.Entry{Key: "ak:{users:" + id + "}", Version: version, Raw: []byte("v")}}
}

func found(rep inspect.Report) []string {
	var out []string
	for _, f := range rep.Found {
		out = append(out, fmt.Sprintf("%s %s %v", f.Kind, f.ID, f.Repaired))
	}
	return out
}

// A disagreement counts only when the second look sees the same entry
// disagree the same way: one replaced between the looks (an invalidation
// in flight) is consistent.
func TestRun_secondLook(t *testing.T) {
	s := newStore(entry("1", "a", inspect.Consistent), entry("2", "a", inspect.Stale), entry("3", "a", inspect.Ghost),
		entry("4", "a", inspect.Skip), entry("5", "a", inspect.FalseNotFound), entry("6", "a", inspect.Corrupt))
	s.then["3"] = func() { s.looks["3"] = entry("3", "b", inspect.Ghost) }            // replaced: a new version
	s.then["5"] = func() { s.looks["5"] = entry("5", "a", inspect.Consistent) }       // the row came back
	s.then["6"] = func() { s.looks["6"] = entry("6", "a", inspect.DivergentMapping) } // another kind now
	counter := &inspect.Counter{}
	r := inspect.New(inspect.Options{Counter: counter})
	rep, err := r.Do(context.Background(), s.walk(r, "1", "2", "3", "4", "5", "6"))
	if err != nil {
		t.Fatal(err)
	}
	if got := found(rep); !slices.Equal(got, []string{"stale 2 false"}) {
		t.Fatalf("found %v", got)
	}
	want := inspect.Stats{Inspected: 5, Consistent: 4, Stale: 1, Suspects: 4, Skipped: 1}
	if rep.Stats != want || !rep.Complete {
		t.Fatalf("stats %+v, complete %v; want %+v", rep.Stats, rep.Complete, want)
	}
	want.Runs = 1
	if got := counter.Stats(); got != want {
		t.Fatalf("counter %+v, want %+v", got, want)
	}
}

// Repair repairs what is found; the first failure is RepairErr; MaxFound
// bounds the list, not the counts.
func TestRun_repair(t *testing.T) {
	s := newStore(entry("1", "a", inspect.Stale), entry("broken", "a", inspect.Ghost), entry("3", "a", inspect.Stale))
	r := inspect.New(inspect.Options{Repair: true, MaxFound: 2})
	rep, err := r.Do(context.Background(), s.walk(r, "1", "broken", "3"))
	if err != nil {
		t.Fatal(err)
	}
	if got := found(rep); !slices.Equal(got, []string{"stale 1 true", "ghost broken false"}) {
		t.Fatalf("found %v", got)
	}
	if rep.Violations() != 3 || rep.Repaired != 2 || rep.RepairErr == nil || !slices.Equal(s.repaired, []string{"1", "3"}) {
		t.Fatalf("report %+v, repaired %v", rep, s.repaired)
	}
}

// Max bounds the items taken, suspects waiting included.
func TestRun_max(t *testing.T) {
	s := newStore(entry("1", "a", inspect.Stale), entry("2", "a", inspect.Consistent), entry("3", "a", inspect.Consistent))
	r := inspect.New(inspect.Options{Max: 2})
	rep, err := r.Do(context.Background(), s.walk(r, "1", "2", "3"))
	if err != nil || rep.Inspected != 2 || rep.Stale != 1 || rep.Complete {
		t.Fatalf("Do(Max 2) = %+v, %v", rep, err)
	}
}

// A run whose context has ended returns ctx's error, not a look's
// wrapping of it.
func TestRun_cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := inspect.New(inspect.Options{Rate: 1})
	look := func(ctx context.Context, id string) (inspect.Look, error) {
		if err := r.Pace(ctx); err != nil {
			return inspect.Look{}, fmt.Errorf("look %s: %w", id, err)
		}
		return inspect.Look{}, nil
	}
	_ = r.Pace(context.Background()) // the next read is a second away
	walk := func(ctx context.Context) (bool, error) { return true, r.Judge(ctx, "1", look, nil) }
	if _, err := r.Do(ctx, walk); err != context.Canceled {
		t.Fatalf("Do(cancelled) = %v, want context.Canceled itself", err)
	}
}

func TestNines(t *testing.T) {
	for _, c := range []struct {
		inspected, violations int64
		want                  float64
	}{{0, 0, 0}, {1000, 0, 3}, {1000, 1, 3}, {10, 10, 0}} {
		got := inspect.Nines(c.inspected, c.violations)
		if math.Abs(got-c.want) > 1e-9 || math.Signbit(got) {
			t.Errorf("Nines(%d, %d) = %v, want %v", c.inspected, c.violations, got, c.want)
		}
	}
}

// Chain takes every item of a walk before the next walk's; Do alone
// takes a batch of each in turn.
func TestChain(t *testing.T) {
	s := newStore()
	for _, id := range []string{"a1", "a2", "b1", "b2"} {
		s.looks[id] = entry(id, "v", inspect.Stale)
	}
	// pages returns a walk of ids, one id a batch.
	pages := func(r *inspect.Run, ids ...string) inspect.Walk {
		return func(ctx context.Context) (bool, error) {
			if err := r.Judge(ctx, ids[0], s.look, nil); err != nil {
				return false, err
			}
			ids = ids[1:]
			return len(ids) == 0, nil
		}
	}
	for _, c := range []struct {
		chain bool
		want  []string
	}{{false, []string{"a1", "b1", "a2", "b2"}}, {true, []string{"a1", "a2", "b1", "b2"}}} {
		r := inspect.New(inspect.Options{})
		walks := []inspect.Walk{pages(r, "a1", "a2"), pages(r, "b1", "b2")}
		if c.chain {
			walks = []inspect.Walk{inspect.Chain(walks...)}
		}
		rep, err := r.Do(context.Background(), walks...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range rep.Found {
			got = append(got, f.ID)
		}
		if !slices.Equal(got, c.want) || !rep.Complete {
			t.Errorf("chain %v: found %v, complete %v; want %v", c.chain, got, rep.Complete, c.want)
		}
	}
}
