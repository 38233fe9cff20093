package repo

import (
	"context"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// positionColumn is the column a positioned load adds to its SELECT.
const positionColumn = "asidekit_position"

// positioned is a row loaded with the primary's WAL insert position, read
// by the same statement. The position is evaluated after the statement's
// snapshot was taken, so it is at or past every commit the row shows:
// what Options.LogStores needs a miss's fill to record.
type positioned[T any] struct {
	Row              T      `gorm:"embedded"`
	AsidekitPosition string `gorm:"column:asidekit_position"`
}

// loadRows reads the rows matching where (at most limit; 0: no limit) for
// a miss. With LogStores, no replicas and a fill that records positions,
// the primary's position rides on the same SELECT; a load that found no
// row reads it with one more query (recordLoadLSN), as every load did
// before.
func (r *Repository[T, ID]) loadRows(ctx context.Context, where clause.Expression, limit int, rows *[]T) error {
	rec := cacheaside.LSNRecorder(ctx)
	if r.tx != nil || r.c.reads != nil || !r.c.logStores || rec == nil || testswitch.ReplicaLSNOff.Load() {
		return r.load(ctx, func(db *gorm.DB) error {
			return limited(db.Clauses(r.c.selectCols()).Where(where), limit).Find(rows).Error
		})
	}
	sel := r.c.selectCols()
	sel.Columns = append(sel.Columns[:len(sel.Columns):len(sel.Columns)],
		clause.Column{Name: "pg_current_wal_insert_lsn()::text AS " + positionColumn, Raw: true})
	var got []positioned[T]
	if err := limited(r.conn(ctx).Model(new(T)).Clauses(sel).Where(where), limit).Find(&got).Error; err != nil {
		return err
	}
	if len(got) == 0 {
		recordLoadLSN(ctx, r.c.db)
		*rows = nil
		return nil
	}
	*rows = make([]T, len(got))
	for i := range got {
		(*rows)[i] = got[i].Row
	}
	if lsn, err := parseLSN(got[0].AsidekitPosition); err == nil {
		rec(lsn)
	}
	return nil
}

func limited(db *gorm.DB, limit int) *gorm.DB {
	if limit > 0 {
		return db.Limit(limit)
	}
	return db
}
