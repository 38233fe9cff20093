package repo

import (
	"reflect"
	"sync"

	"github.com/jackc/pgx/v5/pgtype"
)

// logTypes decodes the values repo/cdc reads from PostgreSQL's log: text
// output, with the column's type OID. It is pgx's type map (the one the
// PostgreSQL driver reads rows with), so a value decodes into a field the
// way a load of the row would: time.Time from any time type, numeric into
// floats, strings or a sql.Scanner, arrays into slices, pointers allocated,
// sql.Scanner types (gorm.DeletedAt, sql.Null*, a service's own) given the
// decoded value. A type the map does not know (an enum, a domain over an
// unknown type) is text.
var logTypes typeDecoder

// typeDecoder is a pgtype.Map with its scan plans kept per (type OID, Go
// type), so that a change's values cost a plan's scan and no planning.
type typeDecoder struct {
	mu    sync.Mutex // guards m and plans: a pgtype.Map is not safe for concurrent use
	m     *pgtype.Map
	plans map[planKey]pgtype.ScanPlan
}

type planKey struct {
	oid uint32
	typ reflect.Type
}

// scan decodes src, the text output of a value of type oid, into dst, a
// pointer to a field.
func (d *typeDecoder) scan(oid uint32, src []byte, dst any) error {
	k := planKey{oid, reflect.TypeOf(dst)}
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.plans[k]
	if !ok {
		if d.m == nil {
			d.m = pgtype.NewMap()
			d.plans = map[planKey]pgtype.ScanPlan{}
		}
		p = d.m.PlanScan(oid, pgtype.TextFormatCode, dst)
		d.plans[k] = p
	}
	return p.Scan(src, dst)
}
