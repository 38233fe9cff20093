package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/asidekit/asidekit/cacheaside"
)

// invalidated is the answer of invalidate and invalidate-all.
type invalidated struct {
	Entity string `json:"entity"`
	// IDs are the ids invalidated (invalidate only).
	IDs []string `json:"ids,omitempty"`
	// Mappings are the GetBy mapping entries invalidated, as
	// "<entity>.by.<column> <value>" (the rows' current unique values).
	Mappings []string `json:"mappings,omitempty"`
	// Entities are the entities walked (invalidate-all).
	Entities []string `json:"entities,omitempty"`
}

// runInvalidate invalidates ids as a write through repo would: the rows'
// entries, and the GetBy mappings of the rows' current unique values.
func runInvalidate(r *runner, args []string) error {
	fs := r.flags("invalidate")
	pos, err := r.parse(fs, args, "ENTITY ID...", 2, -1)
	if err != nil {
		return err
	}
	e, err := r.entityArg(pos[0])
	if err != nil {
		return err
	}
	ids := pos[1:]
	if err := r.checkIDs(e, e.Name, "id", ids...); err != nil {
		return err
	}
	if err := r.confirm(fmt.Sprintf("invalidate %d id(s) of %s", len(ids), e.Name)); err != nil {
		return err
	}
	out := invalidated{Entity: e.Name, IDs: ids}
	// The mappings of the rows' unique values, read first: a malformed
	// id is refused before anything is invalidated.
	maps := map[string][]string{}
	if len(e.Unique) > 0 {
		db, err := r.b.DB(r.ctx)
		if err != nil {
			return err
		}
		for _, col := range e.Unique {
			var vals []string
			q := fmt.Sprintf("SELECT t.%s::text FROM %s t WHERE t.%s IN ? AND t.%[1]s IS NOT NULL",
				quoteCol(col), quoteTable(e.Table), quoteCol(e.Key))
			if err := db.WithContext(r.ctx).Raw(q, ids).Scan(&vals).Error; err != nil {
				return dbErr(e, e.Key, strings.Join(ids, " "), err)
			}
			maps[e.lookupName(col)] = vals
		}
	}
	ent, err := r.b.entity(r.ctx, e, e.Name)
	if err != nil {
		return err
	}
	if err := ent.Invalidate(r.ctx, ids...); err != nil {
		return invalidateErr(err)
	}
	for _, col := range e.Unique {
		name := e.lookupName(col)
		if len(maps[name]) == 0 {
			continue
		}
		m, err := r.b.entity(r.ctx, e, name)
		if err != nil {
			return err
		}
		if err := m.Invalidate(r.ctx, maps[name]...); err != nil {
			return invalidateErr(err)
		}
		for _, v := range maps[name] {
			out.Mappings = append(out.Mappings, name+" "+v)
		}
	}
	return r.output(out, func(w io.Writer) {
		fmt.Fprintf(w, "invalidated %s %s\n", e.Name, strings.Join(ids, " "))
		for _, m := range out.Mappings {
			fmt.Fprintf(w, "invalidated %s\n", m)
		}
	})
}

// invalidateErr: an invalidation Redis did not take was not applied (the
// process that would retry it is this one, which exits).
func invalidateErr(err error) error {
	if errors.Is(err, cacheaside.ErrInvalidationPending) {
		return unreachable("Redis", fmt.Errorf("not invalidated: %w", err))
	}
	if errors.Is(err, cacheaside.ErrInvalid) {
		return usageErr("%v", err)
	}
	return err
}

// runInvalidateAll invalidates every cached row and mapping of an entity
// (cacheaside.Entity.InvalidateAll, a SCAN of each node).
func runInvalidateAll(r *runner, args []string) error {
	fs := r.flags("invalidate-all")
	pos, err := r.parse(fs, args, "ENTITY", 1, 1)
	if err != nil {
		return err
	}
	e, err := r.entityArg(pos[0])
	if err != nil {
		return err
	}
	if err := r.confirm("invalidate every cached row of " + e.Name); err != nil {
		return err
	}
	names := []string{e.Name}
	for _, col := range e.Unique {
		names = append(names, e.lookupName(col))
	}
	out := invalidated{Entity: e.Name}
	for _, name := range names {
		ent, err := r.b.entity(r.ctx, e, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(r.stderr, "invalidate-all: walking %s ...\n", name)
		if err := ent.InvalidateAll(r.ctx); err != nil {
			return invalidateErr(err)
		}
		out.Entities = append(out.Entities, name)
	}
	return r.output(out, func(w io.Writer) {
		fmt.Fprintf(w, "invalidated every cached entry of %s\n", strings.Join(out.Entities, ", "))
	})
}
