package cdc

import "errors"

var (
	// ErrInvalid is returned (wrapped, with the reason) by New for options
	// it cannot use, and by Register for a target it cannot use.
	ErrInvalid = errors.New("cdc: invalid argument")

	// ErrNotLogical is returned when the server's wal_level is not
	// logical: logical replication needs it (a server restart). Setup
	// returns it; Run records it in Stats.LastError, logs a warning and
	// retries until the server is restarted with wal_level=logical.
	ErrNotLogical = errors.New("cdc: PostgreSQL wal_level is not logical")

	// ErrSlotActive is returned by Drop while a process holds the slot.
	ErrSlotActive = errors.New("cdc: replication slot is in use")

	// ErrBadTable is recorded in Stats.LastError (and counted in
	// Stats.BadTables) for a registered table that is missing or has
	// neither a primary key nor a replica identity: it is left out of the
	// publication, since PostgreSQL would refuse UPDATE and DELETE on a
	// published table without one.
	ErrBadTable = errors.New("cdc: table cannot be published")

	// ErrSkipped is recorded in Stats.LastError for a change that was
	// skipped: a change of a relation nobody registered.
	ErrSkipped = errors.New("cdc: change skipped")

	// ErrUndecoded is recorded in Stats.LastError (and counted in
	// Stats.Undecoded) for a change with a value that could not be
	// decoded into its field's type, a tuple that does not match its
	// relation, or a message that does not parse. Such a change is not
	// skipped: it gets the safe superset of its cache work (see the
	// package doc, "Column types").
	ErrUndecoded = errors.New("cdc: change not fully decoded")
)
