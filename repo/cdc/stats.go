package cdc

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
)

// LSN is a position in PostgreSQL's write-ahead log.
type LSN = pglogrepl.LSN

// Stats are an Invalidator's counters and gauges.
type Stats struct {
	// Active is true while this process holds the slot and applies;
	// false while it stands by (or cannot reach the database).
	Active bool

	// Transactions and Changes count the transactions and row changes
	// applied to the cache (a TRUNCATE counts as one change per table).
	// A transaction replayed after a crash counts again.
	Transactions, Changes uint64

	// Skipped counts row changes left out: of a relation nobody
	// registered.
	Skipped uint64

	// Undecoded counts row changes applied with the safe superset of
	// their cache work because a value could not be decoded into its
	// field's type (or the key was missing, or the message did not
	// parse): see "Column types" in the package doc. Each table and
	// column is also logged once, as a warning.
	Undecoded uint64

	// Errors counts failures that were retried: Redis refusing a batch,
	// a lost database connection, a message that could not be decoded.
	Errors uint64

	// SlotsRecreated counts the slots this process found invalidated by
	// PostgreSQL (wal_status 'lost': they fell further behind than
	// max_slot_wal_keep_size), dropped and created anew; each time, every
	// registered repository's cache is invalidated, since the changes in
	// the lost WAL are gone.
	SlotsRecreated uint64

	// BadTables is the number of registered tables left out of the
	// publication at the last start (ErrBadTable).
	BadTables int

	// StandbyChecks counts the times a stand-by found the slot still held
	// by another process (one query every StandbyRetry, on a connection
	// kept while it stands by).
	StandbyChecks uint64

	// Applied is the log position up to which every committed change has
	// been applied (and, within StatusInterval, confirmed to the server).
	Applied LSN

	// LagBytes is how far Applied is behind the end of the server's log,
	// as last reported by the server.
	LagBytes uint64

	// Lag is how long ago the transaction being applied now committed;
	// zero when every transaction received is applied.
	Lag time.Duration

	// Pending counts the row changes received of the transactions not yet
	// applied (Applied is still before their commit), and PendingDone how
	// many of them are in the cache already: a transaction of more than
	// BatchSize changes is applied a batch at a time, in commit order, so
	// PendingDone of Pending is its progress. Both are 0 when every
	// transaction received is applied. The rows of a batch done may read
	// fresh before the others; once Wait returns for the commit, every
	// row of the transaction does.
	Pending, PendingDone uint64

	// LastError is the most recent error counted in Errors, Skipped or
	// Undecoded,
	// for errors.Is. JSON leaves it out, since an error value marshals as
	// {}: LastErrorText carries its message.
	LastError error `json:"-"`

	// LastErrorText is LastError's message, "" when there is none. It is
	// what json.Marshal (expvar, a status page) shows, under the key
	// "LastError" like the other fields' names.
	LastErrorText string `json:"LastError,omitempty"`
}

// counters are the live values behind Stats.
type counters struct {
	active                        activeFlag
	txns, changes, skipped, errs  atomic.Uint64
	undecoded                     atomic.Uint64
	slotsRecreated, standbyChecks atomic.Uint64
	badTables                     atomic.Int64
	applied, serverEnd            atomic.Uint64
	pending, pendingDone          atomic.Uint64 // Stats.Pending, PendingDone
	behindSince                   atomic.Int64  // Unix ns of the commit being applied; 0 when caught up

	mu      sync.Mutex // guards lastErr
	lastErr error
}

func (c *counters) fail(err error, skipped bool) {
	if skipped {
		c.skipped.Add(1)
	} else {
		c.errs.Add(1)
	}
	c.record(err)
}

// record makes err the last error.
func (c *counters) record(err error) {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Active:         c.active.Load(),
		Transactions:   c.txns.Load(),
		Changes:        c.changes.Load(),
		Skipped:        c.skipped.Load(),
		Undecoded:      c.undecoded.Load(),
		Errors:         c.errs.Load(),
		SlotsRecreated: c.slotsRecreated.Load(),
		BadTables:      int(c.badTables.Load()),
		StandbyChecks:  c.standbyChecks.Load(),
		Applied:        LSN(c.applied.Load()),
		Pending:        c.pending.Load(),
		PendingDone:    c.pendingDone.Load(),
	}
	if end := c.serverEnd.Load(); end > uint64(s.Applied) {
		s.LagBytes = end - uint64(s.Applied)
	}
	if t := c.behindSince.Load(); t != 0 {
		s.Lag = max(0, time.Since(time.Unix(0, t)))
	}
	c.mu.Lock()
	s.LastError = c.lastErr
	c.mu.Unlock()
	if s.LastError != nil {
		s.LastErrorText = s.LastError.Error()
	}
	return s
}

// activeFlag is Stats.Active. Storing true also calls onTake: the session
// that takes the slot runs in Run's goroutine, so Run learns there, with
// no goroutine of its own, that a process whose sessions failed applies
// again (and logs it).
type activeFlag struct {
	atomic.Bool
	onTake func() // set by Run before its first session; used in Run's goroutine only
}

// Store sets the flag, and calls onTake if v is true.
func (f *activeFlag) Store(v bool) {
	f.Bool.Store(v)
	if v && f.onTake != nil {
		f.onTake()
	}
}
