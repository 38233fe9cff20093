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
	// skipped: a relation nobody registered, or a row whose key is missing
	// or cannot be mapped to an id.
	ErrSkipped = errors.New("cdc: change skipped")
)
