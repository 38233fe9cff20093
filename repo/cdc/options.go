package cdc

import (
	"fmt"
	"regexp"
	"time"
)

// Options configure an Invalidator. The zero Options are usable.
type Options struct {
	// Slot is the name of the logical replication slot (lower-case
	// letters, digits and underscores, at most 63). Every process of a
	// service uses the same slot: one holds it and applies, the others
	// stand by. Default "asidekit_cdc".
	Slot string

	// Publication is the name of the publication over the registered
	// tables. Default: Slot.
	Publication string

	// BatchSize is the most ids and filter keys held in memory before they
	// are applied, within a large transaction. Default 1000.
	BatchSize int

	// RecentRows is how many rows the Invalidator remembers, as the last
	// change of each in the log left it (the columns of its cache keys
	// only: about 200 bytes for a row keyed by an id and an email), so
	// that an UPDATE of one of them on a table with the default REPLICA
	// IDENTITY, which the log carries without the old row, is applied as
	// with FULL: a unique or list value the UPDATE left alone costs
	// nothing (no mapping dropped, no filter addition, no list bumped).
	// Remembered are the rows the current session read from the log:
	// inserted or updated since it began, and not deleted or truncated
	// since; past RecentRows, rows are forgotten at random. Default
	// 100,000; negative remembers none.
	RecentRows int

	// StandbyRetry is how often a stand-by checks whether the slot is
	// still held by another process (one query on a connection it keeps
	// while it stands by), and tries to take it over once it is not.
	// Default 1 second.
	StandbyRetry time.Duration

	// StatusInterval is the longest time between two reports of the
	// applied position to the server, which lets it release WAL. A crash
	// replays at most this much (invalidations are idempotent). Default
	// 1 second.
	StatusInterval time.Duration

	// MaxBackoff caps the wait between two attempts to apply a
	// transaction while Redis fails, and between reconnections to the
	// database. The first wait is 50ms, doubling. Default 5 seconds.
	MaxBackoff time.Duration
}

// Defaults of Options.
const (
	DefaultSlot           = "asidekit_cdc"
	DefaultBatchSize      = 1000
	DefaultRecentRows     = 100_000
	DefaultStandbyRetry   = time.Second
	DefaultStatusInterval = time.Second
	DefaultMaxBackoff     = 5 * time.Second
	minBackoff            = 50 * time.Millisecond
)

var slotName = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// withDefaults returns a copy of o with its defaults filled in.
func (o Options) withDefaults() (Options, error) {
	if o.Slot == "" {
		o.Slot = DefaultSlot
	}
	if o.Publication == "" {
		o.Publication = o.Slot
	}
	for _, n := range []string{o.Slot, o.Publication} {
		if !slotName.MatchString(n) {
			return o, fmt.Errorf("%w: name %q: use 1 to 63 lower-case letters, digits and underscores", ErrInvalid, n)
		}
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.RecentRows == 0 {
		o.RecentRows = DefaultRecentRows
	}
	if o.StandbyRetry <= 0 {
		o.StandbyRetry = DefaultStandbyRetry
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = DefaultStatusInterval
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	return o, nil
}
