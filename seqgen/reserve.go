package seqgen

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/schema"
)

// reserve raises the DB mark of (biz, day) in one transaction and returns
// the reserved segment (lo, hi]: lo is the mark before, hi the mark after.
//
// The new mark is observed + Segment (the counter value the caller last
// saw, or lo when seeding), and at least lo + n, capped at the day's limit.
// A (biz, day) without a row starts at SeedFrom's answer, or 0.
//
// The row is read with SELECT ... FOR UPDATE (PostgreSQL; SQLite has no row
// locks and serializes writers instead, failing a conflicting transaction
// rather than losing an update), so two reservations never overlap.
//
// A reservation whose DB session was lost (sessionLost) is tried again on
// another pooled connection, as many times as the pool then has
// connections, plus one: a terminated backend, or a connection the server
// closed while it idled in the pool, must not cost a caller its number.
// After an operator or a failover ended every session, each connection of
// the pool, idle or in use, may fail once before the pool opens a new one.
// Should a lost try have committed, its segment is skipped, never issued,
// as with any reservation whose reply is lost.
func (g *Generator) reserve(ctx context.Context, biz string, day Day, observed, n int64, seed bool) (lo, hi int64, err error) {
	lo, hi, err = g.reserveOnce(ctx, biz, day, observed, n, seed)
	if err == nil || !sessionLost(err) {
		return lo, hi, err
	}
	for retries := g.pooledConns() + 1; retries > 0 && sessionLost(err) && ctx.Err() == nil; retries-- {
		lo, hi, err = g.reserveOnce(ctx, biz, day, observed, n, seed)
	}
	return lo, hi, err
}

// pooledConns is how many connections the DB pool has open, 0 if unknown.
func (g *Generator) pooledConns() int {
	sqlDB, err := g.db.DB()
	if err != nil {
		return 0
	}
	return sqlDB.Stats().OpenConnections
}

// reserveOnce is one try of reserve: one transaction.
func (g *Generator) reserveOnce(ctx context.Context, biz string, day Day, observed, n int64, seed bool) (lo, hi int64, err error) {
	err = g.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, found, err := lockRow(tx, biz, day.Key)
		if err != nil {
			return err
		}
		if !found {
			base, err := g.seedFrom(ctx, tx, biz, day)
			if err != nil {
				return err
			}
			ins := schema.SeqSegment{Biz: biz, Day: day.Key, HighWater: base, UpdatedAt: time.Now()}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&ins).Error; err != nil {
				return fmt.Errorf("seqgen: create mark: %w", err)
			}
			if row, found, err = lockRow(tx, biz, day.Key); err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("seqgen: mark of %q %s vanished", biz, day.Key)
			}
		}
		lo = row.HighWater
		if lo >= g.limit {
			return ErrExhausted
		}
		if seed {
			observed = lo
		}
		hi = max(observed+g.opts.Segment, lo+n)
		if hi > g.limit {
			hi = g.limit
		}
		res := tx.Model(&schema.SeqSegment{}).
			Where("biz = ? AND day = ? AND high_water = ?", biz, day.Key, lo).
			Updates(map[string]any{"high_water": hi, "updated_at": time.Now()})
		if res.Error != nil {
			return fmt.Errorf("seqgen: raise mark: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			// Cannot happen under the row lock; refuse rather than guess.
			return fmt.Errorf("seqgen: mark of %q %s moved during the reservation", biz, day.Key)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}

// lockRow reads the mark row of (biz, day) for update.
func lockRow(tx *gorm.DB, biz, day string) (schema.SeqSegment, bool, error) {
	var rows []schema.SeqSegment
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).
		Where("biz = ? AND day = ?", biz, day).
		Limit(1).Find(&rows).Error
	if err != nil {
		return schema.SeqSegment{}, false, fmt.Errorf("seqgen: read mark: %w", err)
	}
	if len(rows) == 0 {
		return schema.SeqSegment{}, false, nil
	}
	return rows[0], true, nil
}

// seedFrom calls Options.SeedFrom, turning a panic into an error: it runs
// inside a DB transaction and, for background refills, on a goroutine of
// ours, where a panic would take the whole process down.
func (g *Generator) seedFrom(ctx context.Context, tx *gorm.DB, biz string, day Day) (base int64, err error) {
	if g.opts.SeedFrom == nil {
		return 0, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: SeedFrom: %v", ErrPanic, r)
		}
	}()
	base, err = g.opts.SeedFrom(ctx, tx, biz, day)
	if err != nil {
		return 0, fmt.Errorf("seqgen: SeedFrom: %w", err)
	}
	if base < 0 || base > g.limit {
		return 0, fmt.Errorf("%w: SeedFrom returned %d, outside [0, %d]", ErrInvalid, base, g.limit)
	}
	return base, nil
}
