package repo

import (
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
)

// Options configure a Repository. The zero Options are usable: the
// cacheaside Policy defaults with a one-minute NullTTL, no Bloom filter, the
// table's name in keys.
type Options struct {
	// Policy is the cacheaside Policy of the entity, and of the GetBy
	// mappings (without the Filter), with cacheaside's meanings: a zero
	// NullTTL caches absent rows for cacheaside.DefaultNullTTL,
	// cacheaside.Disabled turns null caching off. Policy.Filter must be nil
	// when Filter is set.
	Policy cacheaside.Policy

	// Filter, when set, sizes the Bloom filters the repository creates:
	// one over primary keys, named Name and used as the Policy's Filter,
	// and one over the values of each single-column unique key (which GetBy
	// consults) and of InsertIfAbsent's key, named Name + ".by." + the
	// key's columns joined by "+" (see FilterBy). A filter answers
	// "maybe" (reads go to the database) until it is known complete; it
	// then rebuilds itself from the table in the background, and
	// WarmFilter does it at once. The repository sets Source; the other
	// fields are used as they are. Its Namespace should match the Cache's.
	// Default nil: no filter.
	Filter *bloom.Options

	// FilterClient is the Redis client the Bloom filters live on. Bloom
	// shards must not be evicted, so a cache Redis that evicts with an
	// allkeys-* policy calls for a separate one here. Default: the Cache's
	// client. Unused without Filter.
	FilterClient redis.UniversalClient

	// Name is the entity's name in Redis keys and metrics. Default: the
	// table's name.
	Name string

	// UniqueKey names the columns (database or Go field names) of the
	// unique index InsertIfAbsent de-duplicates on, e.g. {"address",
	// "room"}; with Filter, it also gets a Bloom filter. Default: the
	// model's only unique index besides the primary key, without a filter;
	// InsertIfAbsent fails with ErrNoUniqueKey when there is none or more
	// than one.
	UniqueKey []string

	// Ownership says how New claims Name in the Cache's namespace, so that
	// two services never share an entity's cache entries by accident (see
	// "Ownership" in the package doc). Default OwnershipCheck.
	Ownership Ownership

	// BatchSize is the most ids one SELECT … IN (…) carries, and the page
	// size of WarmFilter and RebuildFilter. Default DefaultBatchSize.
	BatchSize int

	// AfterCommitErrors makes the repository's writes outside a
	// transaction return an error matching ErrAfterCommit when the cache
	// upkeep after their commit failed. Default false: they return nil,
	// since the write is in the database and a caller that retried it
	// would write twice; the failed work is retried in the background
	// either way, counted and logged (GetAfterCommitStats).
	AfterCommitErrors bool

	// WriteThrough makes Create (of a row with its primary key set),
	// Update and Put store the row as stored (they read it back with
	// RETURNING *, and v holds it on return) in the cache after their
	// COMMIT, instead of invalidating it: the next Get, or a cached
	// list's GetMany, of the row costs no SELECT. The row is stored only if
	// its version is still the one the write read before its statement
	// (cacheaside's SetIfVersion), so writes whose upkeeps run out of
	// commit order leave the row invalidated, never older. Not in a
	// transaction's view, and not for a T with an AfterFind hook (a load
	// would return the row changed by it). Default false: writes
	// invalidate the row, and the next read loads it.
	WriteThrough bool

	// LogStores makes repo/cdc store the row a change left, decoded from
	// the database's log (for a DELETE or a soft delete, the row's
	// absence), instead of invalidating it, where the row is no older than
	// any write that completed (its version records a position at or
	// before the change: cacheaside.StoreFromLog, AbsentFromLog): the next
	// read of a row changed with plain SQL is a hit, not a load. A load of rows
	// whose versions record no position reads the primary's WAL position
	// in its own SELECT (one more column; with ReadDB, or when it found no
	// row, one more query, as ReadDB's loads already make), and it only
	// stores rows whose every column the log carries and decodes exactly
	// as a load reads it (columns of boolean, integer, double, text,
	// varchar, char, bytea, uuid, date and timestamp types into fields of
	// the matching Go kinds, without a serializer; no AfterFind hook); any
	// other change invalidates as without it. Set it in every process: one
	// without it only makes the Invalidator store less, never wrongly.
	// PostgreSQL only. Default false.
	LogStores bool

	// ReadDB, when set, is a read-only *gorm.DB on a streaming replica of
	// the primary: cache misses of Get and GetMany load from it when it
	// has replayed every write they must see (see ReadStats and "Read
	// replicas" in the package doc), else from the primary. Everything
	// else runs on the *gorm.DB passed to New, which must reach the
	// primary. With dbresolver registered on that *gorm.DB, leave ReadDB
	// nil: the replica dbresolver picks is used the same way. It must be
	// opened on its own: a ReadDB that shares the *gorm.DB's connection
	// pool or its *gorm.Config (gorm.Open stores the new pool in the
	// Config it is given, so two *gorm.DB opened with one Config both use
	// the last pool) is refused with ErrInvalid. Default nil: no replica.
	ReadDB *gorm.DB

	// ReplicaPoll is the shortest interval between two readings of a
	// replica's replay position (one query on the replica, made by a miss
	// that needs a newer position than the last reading). Default
	// DefaultReplicaPoll. Unused without replicas.
	ReplicaPoll time.Duration
}

// Defaults of Options.
const (
	// DefaultNullTTL is how long an absent row is cached when
	// Policy.NullTTL is zero: cacheaside's default, the same in both layers.
	DefaultNullTTL = cacheaside.DefaultNullTTL
	// DefaultBatchSize is the default Options.BatchSize.
	DefaultBatchSize = 1000
	// maxBatchSize keeps a statement under PostgreSQL's 65535 parameters.
	maxBatchSize = 60000
)

// withDefaults returns a copy of o with its defaults filled in.
func (o Options) withDefaults(table string) (Options, error) {
	if o.Filter != nil && o.Policy.Filter != nil {
		return o, fmt.Errorf("%w: both Filter and Policy.Filter are set", ErrInvalid)
	}
	if o.Ownership < OwnershipCheck || o.Ownership > OwnershipShared {
		return o, fmt.Errorf("%w: unknown Ownership %d", ErrInvalid, o.Ownership)
	}
	if o.Name == "" {
		o.Name = table
	}
	switch {
	case o.BatchSize == 0:
		o.BatchSize = DefaultBatchSize
	case o.BatchSize < 0 || o.BatchSize > maxBatchSize:
		return o, fmt.Errorf("%w: BatchSize %d, it must be in [1, %d]", ErrInvalid, o.BatchSize, maxBatchSize)
	}
	switch {
	case o.ReplicaPoll == 0:
		o.ReplicaPoll = DefaultReplicaPoll
	case o.ReplicaPoll < 0:
		return o, fmt.Errorf("%w: negative ReplicaPoll %v", ErrInvalid, o.ReplicaPoll)
	}
	o.UniqueKey = append([]string(nil), o.UniqueKey...)
	return o, nil
}

// checkReadDB refuses a ReadDB that would run on the primary's *gorm.DB's
// connections, or move them: one sharing db's *gorm.Config (GORM's
// Config holds the pool, so one of the two runs on the other's server)
// or its connection pool.
func checkReadDB(db, read *gorm.DB) error {
	switch {
	case read == nil:
		return nil
	case read.Config == db.Config:
		return fmt.Errorf("%w: ReadDB shares the *gorm.Config of the primary's *gorm.DB: open the replica with a gorm.Config of its own", ErrInvalid)
	case samePool(read.Config.ConnPool, db.Config.ConnPool):
		return fmt.Errorf("%w: ReadDB uses the connection pool of the primary's *gorm.DB: open it on the replica", ErrInvalid)
	}
	return nil
}

// samePool reports whether a and b are one pool (comparable and equal).
func samePool(a, b gorm.ConnPool) bool {
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}
