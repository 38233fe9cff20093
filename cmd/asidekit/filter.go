package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/guard/bloom"
)

// filterReport describes one Bloom filter of an entity.
type filterReport struct {
	Name   string      `json:"name"`
	Column string      `json:"column"`
	Stats  bloom.Stats `json:"stats"`
	// Rebuilt is how many keys a warm or rebuild put in (-1: not rebuilt,
	// the filter was complete).
	Rebuilt int64 `json:"rebuilt"`
}

// runFilter is filter stats|warm|rebuild ENTITY.
func runFilter(r *runner, args []string) error {
	fs := r.flags("filter")
	pos, err := r.parse(fs, args, "stats|warm|rebuild ENTITY", 2, 2)
	if err != nil {
		return err
	}
	verb := pos[0]
	if verb != "stats" && verb != "warm" && verb != "rebuild" {
		return usageErr("usage: asidekit filter stats|warm|rebuild ENTITY")
	}
	e, err := r.entityArg(pos[1])
	if err != nil {
		return err
	}
	if e.Filter == nil {
		return usageErr("%s: the config gives it no filter", e.Name)
	}
	if verb == "rebuild" {
		if err := r.confirm("rebuild the Bloom filters of " + e.Name + " from its table"); err != nil {
			return err
		}
	}
	rdb, err := r.b.Redis(r.ctx)
	if err != nil {
		return err
	}
	var db *gorm.DB
	if verb != "stats" {
		if db, err = r.b.DB(r.ctx); err != nil {
			return err
		}
	}
	// The primary key's filter, then one per unique column, as repo
	// names them.
	cols := append([]string{e.Key}, e.Unique...)
	var out []filterReport
	for i, col := range cols {
		name := e.Name
		if i > 0 {
			name = e.lookupName(col)
		}
		f, err := bloom.New(rdb, name, &bloom.Options{Namespace: r.cfg.Namespace,
			Capacity: e.Filter.Capacity, FalsePositiveRate: e.Filter.FalsePositiveRate, Shards: e.Filter.Shards})
		if err != nil {
			return usageErr("filter %s: %v", name, err)
		}
		rep := filterReport{Name: name, Column: col, Rebuilt: -1}
		st, err := f.Stats(r.ctx)
		if err != nil {
			return filterErr(name, err)
		}
		if verb == "rebuild" || (verb == "warm" && st.UntrustedShards > 0) {
			n, err := r.rebuildFilter(f, name, db, e, col)
			if err != nil {
				return err
			}
			rep.Rebuilt = n
			if st, err = f.Stats(r.ctx); err != nil {
				return filterErr(name, err)
			}
		}
		rep.Stats = st
		out = append(out, rep)
	}
	return r.output(out, func(w io.Writer) {
		fmt.Fprintf(w, "%-28s %-10s %8s %10s %9s %8s %s\n", "FILTER", "COLUMN", "SHARDS", "ELEMENTS", "FPR", "GEN", "STATE")
		for _, f := range out {
			st := f.Stats
			state := "complete"
			if st.UntrustedShards > 0 {
				state = fmt.Sprintf("%d shard(s) not known complete: answers \"maybe\"", st.UntrustedShards)
			}
			if st.Rebuilding {
				state += ", rebuild in progress"
			}
			if f.Rebuilt >= 0 {
				state += fmt.Sprintf(", rebuilt from %d keys", f.Rebuilt)
			}
			est := "inf"
			if !math.IsInf(st.EstimatedCount, 0) {
				est = fmt.Sprintf("%.0f", st.EstimatedCount)
			}
			fmt.Fprintf(w, "%-28s %-10s %8d %10s %9.2g %8d %s\n", f.Name, f.Column, st.Shards, est, st.FalsePositiveRate, st.Generation, state)
		}
	})
}

// filterErr classifies a filter's error.
func filterErr(name string, err error) error {
	if errors.Is(err, bloom.ErrLayoutMismatch) {
		return usageErr("filter %s: %v (the config's capacity, false_positive_rate and shards must be the service's)", name, err)
	}
	if isUnreachable(err) {
		return unreachable("Redis", err)
	}
	return fmt.Errorf("filter %s: %w", name, err)
}

// rebuildFilter rebuilds f from the values of col (the table's rows read
// by pages of the primary key, soft-deleted rows left out, as repo's
// rebuild reads them), printing progress, and returns the keys added.
func (r *runner) rebuildFilter(f *bloom.Filter, name string, db *gorm.DB, e *EntityConfig, col string) (int64, error) {
	live, err := softDeleteCond(r.ctx, db, e)
	if err != nil {
		return 0, err
	}
	var n atomic.Int64
	p := &progress{w: r.stderr}
	src := func(ctx context.Context, add func([]string) error) error {
		k, c := quoteCol(e.Key), quoteCol(col)
		sel := fmt.Sprintf("SELECT t.%s::text AS k, t.%s::text AS v FROM %s t WHERE t.%s IS NOT NULL%s", k, c, quoteTable(e.Table), c, live)
		order := fmt.Sprintf(" ORDER BY t.%s LIMIT %d", k, pageSize)
		first, q := sel+order, sel+" AND t."+k+" > ?"+order
		last := ""
		for page := 0; ; page++ {
			var rows []struct{ K, V string }
			var err error
			if page == 0 {
				err = db.WithContext(ctx).Raw(first).Scan(&rows).Error
			} else {
				err = db.WithContext(ctx).Raw(q, last).Scan(&rows).Error
			}
			if err != nil {
				return dbErr(e, col, "", err)
			}
			if len(rows) == 0 {
				return nil
			}
			keys := make([]string, len(rows))
			for i, row := range rows {
				keys[i] = row.V
			}
			if err := add(keys); err != nil {
				return err
			}
			last = rows[len(rows)-1].K
			p.printf(false, "filter %s: %d keys", name, n.Add(int64(len(rows))))
			if len(rows) < pageSize {
				return nil
			}
		}
	}
	for range 4 {
		n.Store(0)
		err = f.Rebuild(r.ctx, src)
		if !errors.Is(err, bloom.ErrRebuildSuperseded) {
			break
		}
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return 0, err
		}
		return 0, filterErr(name, err)
	}
	p.printf(true, "filter %s: rebuilt from %d keys", name, n.Load())
	return n.Load(), nil
}

// pageSize is the rows a filter rebuild reads per query (repo's
// DefaultBatchSize).
const pageSize = 1000

// softDeleteCond is the condition that leaves out soft-deleted rows, ""
// for a table without a deleted_at column.
func softDeleteCond(ctx context.Context, db *gorm.DB, e *EntityConfig) (string, error) {
	var n int64
	err := db.WithContext(ctx).Raw(`SELECT count(*) FROM pg_attribute
		WHERE attrelid = to_regclass(?) AND attname = 'deleted_at' AND NOT attisdropped`, quoteTable(e.Table)).Scan(&n).Error
	if err != nil {
		return "", dbErr(e, "deleted_at", "", err)
	}
	if n == 0 {
		return "", nil
	}
	return " AND t.deleted_at IS NULL", nil
}
