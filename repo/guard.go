package repo

import (
	"context"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// A write of one row reads the row's unique and list columns before its
// statement (readBefore): which mappings and lists the row leaves. Outside
// a transaction that read cannot lock the row, so a concurrent writer may
// change those columns between the read and the statement; the write
// would then patch or invalidate for a row that is no longer there (a
// row moved back to where it was looks unmoved: nothing patched, and the
// other writer's line, landing after this write returned, takes the row
// back). So the statement is guarded: it changes the row only while those
// columns hold what the read found. A guarded statement that matches no
// row (the row changed or went meanwhile) is run again in a transaction
// of its own (inTx), whose read locks the row (lockBefore). A row that the
// read did not find is not guarded, except by Put (its upsert updates
// nothing on a conflict: the row came meanwhile).

// guard is the condition that a write's statement changes its row only
// as readBefore found it; nil when the write is unguarded (in a
// transaction, or when nothing was read).
type guard []clause.Expression

// guardOf returns the guard of the row rv that readBefore read: an
// equality (NULL-safe) per column it read, other than the primary key;
// nil when none is left. Columns of types that PostgreSQL may not compare
// with "=" (JSON, geometric, custom types) and serialized ones are left
// out.
func (c *core[T, ID]) guardOf(ctx context.Context, rv reflect.Value) guard {
	if testswitch.BeforeGuardOff.Load() {
		return nil
	}
	var g guard
	for _, col := range c.keyCols()[1:] {
		f := c.sch.LookUpField(col)
		if f == nil || f.Serializer != nil { // a serialized value compares as its encoding
			continue
		}
		switch f.DataType { // the types whose values "=" compares as read
		case schema.Bool, schema.Int, schema.Uint, schema.Float, schema.String, schema.Time, schema.Bytes, "uuid":
		default:
			continue
		}
		v, _ := f.ValueOf(ctx, rv)
		g = append(g, clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: f.DBName}, Value: v})
	}
	return g
}

// absentGuard is Put's guard for a row that readBefore did not find: its
// upsert may insert, and updates nothing.
func absentGuard() guard {
	if testswitch.BeforeGuardOff.Load() {
		return nil
	}
	return guard{clause.Expr{SQL: "1 = 0"}}
}

// on returns db with the guard's conditions added.
func (g guard) on(db *gorm.DB) *gorm.DB {
	for _, e := range g {
		db = db.Where(e)
	}
	return db
}

// where is the guard as a clause.Where (an upsert's DO UPDATE … WHERE).
func (g guard) where() clause.Where {
	return clause.Where{Exprs: g}
}
