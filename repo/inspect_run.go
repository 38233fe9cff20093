package repo

import (
	"bytes"
	"context"
	"encoding"
	"errors"
	"log/slog"
	"reflect"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/backoff"
)

// inspection is one run of Inspect; it is used by one goroutine.
type inspection[T any, ID comparable] struct {
	r    *Repository[T, ID]
	o    InspectOptions
	dec  func(string) (ID, error)
	pace pacer
	stop time.Time // when sampling stops; zero: at the end of the walks
	rep  InspectReport
	// suspects wait for their second look, in the order they were found
	// (so by due time).
	suspects []suspect
}

// suspect is a disagreement seen at a first look, confirmed or cleared by
// a second one.
type suspect struct {
	due   time.Time
	kind  InspectKind
	first look
	// again looks a second time: it returns the same kind, or 0 when the
	// item is consistent now (or its entry changed since the first look).
	again func(ctx context.Context) (InspectKind, look, error)
	// repair fixes the item.
	repair func(ctx context.Context) error
}

// look is what one look at an item saw.
type look struct {
	entity, id string
	peek       cacheaside.Peeked // the zero Peeked for a filter probe
	cached     string
	stored     string
}

// walk is one source of items: next judges up to a batch of them and
// reports whether the walk is done.
type walk func(ctx context.Context) (done bool, err error)

func (in *inspection[T, ID]) run(ctx context.Context) error {
	walks := []walk{entryWalk(in, in.r.c.ent, in.lookRow)}
	for _, l := range in.r.c.lookups {
		walks = append(walks, entryWalk(in, l.ent, func(ctx context.Context, key string) (look, InspectKind, error) {
			return in.lookMapping(ctx, l, key)
		}))
	}
	if in.r.c.filter != nil {
		walks = append(walks, in.filterWalk())
	}
	if in.o.For > 0 {
		in.stop = time.Now().Add(in.o.For)
	}
	for len(walks) > 0 && !in.over() {
		for i := 0; i < len(walks); i++ {
			done, err := walks[i](ctx)
			if err != nil {
				return err
			}
			if done {
				walks = append(walks[:i], walks[i+1:]...)
				i--
			}
			if err := in.confirm(ctx, false); err != nil {
				return err
			}
		}
	}
	in.rep.Complete = len(walks) == 0
	return in.confirm(ctx, true)
}

// judged counts an item whose verdict is final (kind 0: consistent).
func (in *inspection[T, ID]) judged(k InspectKind) {
	in.rep.add(k)
	if in.o.Stats != nil {
		in.o.Stats.update(func(s *InspectStats) { s.add(k) })
	}
}

func (in *inspection[T, ID]) count(f func(*InspectStats)) {
	f(&in.rep.InspectStats)
	if in.o.Stats != nil {
		in.o.Stats.update(f)
	}
}

// suspect queues s for its second look, Grace from now.
func (in *inspection[T, ID]) suspect(s suspect) {
	s.due = time.Now().Add(in.o.Grace)
	in.suspects = append(in.suspects, s)
	in.count(func(st *InspectStats) { st.Suspects++ })
}

// confirm gives the suspects that are due their second look; with all, it
// waits for every one.
func (in *inspection[T, ID]) confirm(ctx context.Context, all bool) error {
	for len(in.suspects) > 0 {
		s := in.suspects[0]
		if d := time.Until(s.due); d > 0 {
			if !all {
				return nil
			}
			if err := backoff.Sleep(ctx, d); err != nil {
				return err
			}
		}
		in.suspects = in.suspects[1:]
		k, second, err := s.again(ctx)
		if err != nil {
			return err
		}
		if k != s.kind {
			in.judged(0) // resolved: an invalidation was in flight
			continue
		}
		in.violation(ctx, k, second, s.repair)
	}
	return nil
}

// violation counts, logs and (with Repair) fixes a confirmed violation.
func (in *inspection[T, ID]) violation(ctx context.Context, k InspectKind, lk look, repair func(context.Context) error) {
	in.judged(k)
	v := Violation{Kind: k, Entity: lk.entity, Key: lk.peek.Key, ID: lk.id, Version: lk.peek.Version, Cached: cut(lk.cached), Stored: cut(lk.stored)}
	if in.o.Repair {
		if err := repair(ctx); err == nil || errors.Is(err, cacheaside.ErrInvalidationPending) {
			v.Repaired = true
			in.count(func(s *InspectStats) { s.Repaired++ })
		}
	}
	in.o.Logger.LogAttrs(ctx, slog.LevelWarn, "asidekit: cache inconsistency",
		slog.String("kind", k.String()), slog.String("entity", v.Entity), slog.String("key", v.Key), slog.String("id", v.ID),
		slog.String("version", v.Version), slog.String("cached", v.Cached), slog.String("stored", v.Stored), slog.Bool("repaired", v.Repaired))
	if len(in.rep.Found) < maxFound {
		in.rep.Found = append(in.rep.Found, v)
	}
}

// cut shortens s to 256 bytes for a report.
func cut(s string) string {
	if len(s) > 256 {
		return s[:256] + "…"
	}
	return s
}

// sameEntry reports whether two Peeks saw the same store: the same version
// token and the same bytes.
func sameEntry(a, b cacheaside.Peeked) bool {
	return a.Version == b.Version && a.State == b.State && bytes.Equal(a.Raw, b.Raw)
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
