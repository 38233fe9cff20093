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
// Old and New are the row before and after the change: nil for an
// insert's Old and a delete's New (and for an update's Old when the log
// carries no old row, which means the primary key did not change).
type Change struct {
	Kind     Kind
	Old, New Row
	// Covered says that every cached key of the table (rows, mappings,
	// lists) is invalidated after this change is committed and before it
	// counts as applied: a TRUNCATE of the table in the same group of
	// transactions, whose InvalidateAll refuses every load that began
	// before it. Such a change needs only its filters' additions.
	Covered bool
	// CommitLSN and Xid name the change's transaction: where its commit
	// record starts in the log, and its id (32 bits, as the log carries
	// it). Zero when unknown.
	CommitLSN uint64
	Xid       uint32
}

// Row is one side of a change: the columns the log carries, each with its
// PostgreSQL type, so that the repository decodes it into its field's Go
// type (pgx's type map), never by parsing text. A column absent from the
// row is unknown (a key-only old row, an unchanged TOAST value the log
// left out, a value in binary format); a column present is known, NULL
// included. A nil Row is no row; an empty non-nil Row is a row whose
// columns are all unknown.
type Row []Column

// Column is one column's value in a Row.
type Column struct {
	Name string // the database column name
	Type uint32 // the column's type OID (pg_type.oid)
	Null bool   // the value is NULL; Text is nil then
	// Text is the value in PostgreSQL's text output format. It is owned
	// by the change: nothing writes it afterwards.
	Text []byte
}

// Lookup returns the column named name, and whether the row carries it
// (false: the value is unknown). Rows are a table's width, so a scan is
// cheaper than a map.
func (r Row) Lookup(name string) (Column, bool) {
	for i := range r {
		if r[i].Name == name {
			return r[i], true
		}
	}
	return Column{}, false
}

// Undecoded is a column of a change that a Table could not use: a value
// its field's type does not take, or a primary key the change lacks.
type Undecoded struct {
	Column string // the database column name
	Err    error  // why
}
