package repo

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// maxParams keeps one INSERT under PostgreSQL's 65535 bound parameters.
const maxParams = 65000

// CreateMany inserts vs, BatchSize rows per INSERT (fewer when the model
// has so many columns that a batch would pass 65,000 parameters), filling
// in the primary keys the database generates. All batches run in one
// transaction: the WithTx view's, or one of its own, so a failed batch
// leaves none written.
//
// After the commit it does, for every row at once, what Create does: the
// ids and unique-key values are added to the Bloom filters, and the ids
// and unique values invalidated (clearing cached "not found" answers),
// one pipelined call per filter and entity; the lists of declared
// queries that the rows join are patched (see "Cached queries" in the
// package doc). Rows are checked as Create
// checks them (ErrInvalidID) before anything is written. When T has a
// gorm.DeletedAt, a soft-deleted row's primary key is taken over as by
// Create, and a live row with the key fails the whole call with an error
// matching gorm.ErrDuplicatedKey.
func (r *Repository[T, ID]) CreateMany(ctx context.Context, vs []T) error {
	if err := r.c.open("CreateMany"); err != nil {
		return err
	}
	c := r.c
	for i := range vs {
		id, hasID := c.idOf(ctx, &vs[i])
		switch sch := c.sch; {
		case hasID:
			if _, err := c.cacheID(id); err != nil {
				return fmt.Errorf("%w (CreateMany row %d)", err, i)
			}
		case !c.pk.HasDefaultValue && !sch.BeforeCreate && !sch.BeforeSave:
			return fmt.Errorf("%w: %s: CreateMany row %d needs the primary key set (the database does not generate it)", ErrInvalidID, c.name, i)
		}
		if err := c.checkUniques(ctx, &vs[i]); err != nil {
			return fmt.Errorf("%w (CreateMany row %d)", err, i)
		}
	}
	return r.inTx(ctx, func(view *Repository[T, ID]) error {
		seen := view.seenMany(ctx, func(int) *rowKeys { return nil }, vs)
		for _, batch := range c.batches(vs) {
			q := view.returning(view.conn(ctx), seen)
			if c.softDel != nil {
				q = q.Clauses(clause.OnConflict{
					Columns:   []clause.Column{{Name: c.pk.DBName}},
					UpdateAll: true,
					Where: clause.Where{Exprs: []clause.Expression{clause.Expr{
						SQL:  "? IS NOT NULL",
						Vars: []any{clause.Column{Table: clause.CurrentTable, Name: c.softDel.DBName}},
					}}},
				})
			}
			res := q.Create(&batch)
			if res.Error != nil {
				return fmt.Errorf("repo: %s: create %d rows: %w", c.name, len(batch), res.Error)
			}
			if res.RowsAffected != int64(len(batch)) {
				return fmt.Errorf("repo: %s: create %d rows: %w: %d of them exist", c.name, len(batch), gorm.ErrDuplicatedKey, int64(len(batch))-res.RowsAffected)
			}
		}
		for i := range vs {
			if err := view.upkeep(ctx, nil, &vs[i], seen); err != nil {
				return err
			}
		}
		return nil
	})
}

// PutMany writes vs as Put does, in batches of BatchSize rows: INSERT …
// ON CONFLICT (pk) DO UPDATE of every column, in one transaction (the
// WithTx view's, or one of its own). Every row needs its primary key, and
// each key may appear once (ErrInvalidID otherwise, before anything is
// written); CreateMany inserts rows whose key the database generates.
//
// Before each batch, one SELECT … IN reads the unique-column values of the
// rows it overwrites. After the commit the ids are added to the filters
// and invalidated, with the old and new mappings of the unique values that
// changed, one pipelined call per filter and entity.
func (r *Repository[T, ID]) PutMany(ctx context.Context, vs []T) error {
	if err := r.c.open("PutMany"); err != nil {
		return err
	}
	c := r.c
	seen := make(map[ID]int, len(vs))
	for i := range vs {
		id, ok := c.idOf(ctx, &vs[i])
		if !ok {
			return fmt.Errorf("%w: %s: PutMany row %d needs the primary key set", ErrInvalidID, c.name, i)
		}
		if _, err := c.cacheID(id); err != nil {
			return fmt.Errorf("%w (PutMany row %d)", err, i)
		}
		if err := c.checkUniques(ctx, &vs[i]); err != nil {
			return fmt.Errorf("%w (PutMany row %d)", err, i)
		}
		if j, dup := seen[id]; dup {
			return fmt.Errorf("%w: %s: PutMany rows %d and %d have the same primary key", ErrInvalidID, c.name, j, i)
		}
		seen[id] = i
	}
	return r.inTx(ctx, func(view *Repository[T, ID]) error {
		for _, batch := range c.batches(vs) {
			old, err := view.readBeforeMany(ctx, batch)
			if err != nil {
				return err
			}
			before := func(i int) *rowKeys {
				if old == nil { // no unique key and no query: the row may have existed
					return &rowKeys{}
				}
				id, _ := c.idOf(ctx, &batch[i])
				return old[id]
			}
			seen := view.seenMany(ctx, before, batch)
			err = view.returning(view.conn(ctx), seen).Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: c.pk.DBName}},
				UpdateAll: true,
			}).Create(&batch).Error
			if err != nil {
				return fmt.Errorf("repo: %s: put %d rows: %w", c.name, len(batch), err)
			}
			for i := range batch {
				if err := view.upkeep(ctx, before(i), &batch[i], seen); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// inTx runs fn on a view bound to a transaction: the view's own when it
// has one (fn's upkeep then waits for the caller's commit), or a new one
// whose upkeep runs after its commit.
func (r *Repository[T, ID]) inTx(ctx context.Context, fn func(view *Repository[T, ID]) error) error {
	if r.tx != nil {
		return fn(r)
	}
	return Transaction(ctx, r.c.db, func(tx *Tx) error { return fn(r.WithTx(tx)) })
}

// batches splits vs into slices of at most BatchSize rows, fewer when a
// batch would bind more than maxParams parameters.
func (c *core[T, ID]) batches(vs []T) [][]T {
	size := min(c.batch, max(1, maxParams/max(1, len(c.sch.DBNames))))
	var out [][]T
	for start := 0; start < len(vs); start += size {
		out = append(out, vs[start:min(start+size, len(vs))])
	}
	return out
}
