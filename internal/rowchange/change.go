package rowchange

// Kind says what a committed change did to a row.
type Kind uint8

// The kinds of row change.
const (
	Insert Kind = iota + 1
	Update
	Delete
)

// Change is one committed change to a row, as a change-data-capture reader
// decodes it from the database's log.
//
// Old and New hold the row's column values, by database column name,
// before and after the change: nil maps for an insert's Old and a delete's
// New (and for an update's Old when the log carries no old row, which
// means the primary key did not change). A column absent from a map is
// unknown; a nil value is NULL. A value is anything GORM can set on the
// field; the database's text output works for integers, strings, booleans
// and uuids.
type Change struct {
	Kind     Kind
	Old, New map[string]any
}
