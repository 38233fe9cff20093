package configstore

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/keys"
	"github.com/asidekit/asidekit/internal/script"
)

var (
	// ErrNotFound is returned by Get for a key that has no value.
	ErrNotFound = errors.New("configstore: key not found")

	// ErrInvalid is returned (wrapped) for a bad key, value, option or
	// argument.
	ErrInvalid = errors.New("configstore: invalid argument")

	// ErrTimeout is returned (wrapped) by a read that waited
	// Options.WaitTimeout for another process to rebuild the hash.
	ErrTimeout = errors.New("configstore: timed out waiting for the hash to be rebuilt")

	// ErrNotMirrored is returned (wrapped, with the Redis error) by a write
	// that was committed to the database but could not be copied into the
	// hash. The write is durable; the hash lags until Reconcile repairs it
	// (or the hash is rebuilt).
	ErrNotMirrored = errors.New("configstore: committed to the database but not mirrored in Redis")
)

var (
	//go:embed apply.lua
	applySrc    string
	applyScript = script.New(applySrc)

	//go:embed rebuild.lua
	rebuildSrc    string
	rebuildScript = script.New(rebuildSrc)

	//go:embed lock.lua
	lockSrc    string
	lockScript = script.New(lockSrc)

	//go:embed unlock.lua
	unlockSrc    string
	unlockScript = script.New(unlockSrc)

	//go:embed fix.lua
	fixSrc    string
	fixScript = script.New(fixSrc)
)

// Store reads and writes the settings of one scope. It is safe for
// concurrent use and needs no Close. Its only goroutines are Watch's, which
// end with Watch's context, a hash rebuild shared by concurrent readers,
// which outlives a reader that gave up by at most WaitTimeout + LockTTL,
// and a table read shared by concurrent readers while Redis fails, which
// outlives them by at most WaitTimeout.
type Store struct {
	rdb   redis.UniversalClient
	db    *gorm.DB
	opts  Options
	scope string // the table's namespace column

	hash    string // ak:cfg:{scope}
	lock    string // ak:cfg:{scope}:lock
	channel string // ak:cfg:{scope}:changes

	rebuilds  singleflight.Group // one rebuild at a time per Store
	fallbacks singleflight.Group // one table read per key set at a time (fallback.go)
	stats     counters
	watchPing time.Duration // a test may shorten it
}

// New returns a Store of the settings in opts.Scope, reading through client
// and writing to db. The table asidekit_config must exist
// (schema.Migrate). A nil opts means all defaults.
func New(client redis.UniversalClient, db *gorm.DB, opts *Options) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	if db == nil {
		return nil, fmt.Errorf("%w: nil *gorm.DB", ErrInvalid)
	}
	o, err := opts.init()
	if err != nil {
		return nil, err
	}
	if err := checkText("scope", o.Scope, maxScope); err != nil {
		return nil, err
	}
	tag, err := keys.Escape(o.Scope)
	if err != nil {
		return nil, fmt.Errorf("%w: scope: %w", ErrInvalid, err)
	}
	base := o.Namespace + ":cfg:{" + tag + "}"
	return &Store{
		rdb:       client,
		db:        db,
		opts:      o,
		scope:     o.Scope,
		hash:      base,
		lock:      base + ":lock",
		channel:   base + ":changes",
		watchPing: watchPing,
	}, nil
}

// Scope returns the scope the Store reads and writes.
func (s *Store) Scope() string { return s.scope }

// Key returns the Redis key of the hash that mirrors the scope.
func (s *Store) Key() string { return s.hash }

// checkText rejects an empty, too long or non-UTF-8 string, or one with a
// NUL byte (PostgreSQL's text type cannot hold one).
func checkText(what, v string, max int) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: empty %s", ErrInvalid, what)
	case len(v) > max:
		return fmt.Errorf("%w: %s of %d bytes, the limit is %d", ErrInvalid, what, len(v), max)
	}
	return checkUTF8(what, v)
}

func checkUTF8(what, v string) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, what)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%w: %s contains a NUL byte", ErrInvalid, what)
	}
	return nil
}

func (s *Store) checkKey(key string) error { return checkText("key", key, maxKey) }

func (s *Store) checkValue(v string) error {
	if len(v) > s.opts.MaxValueSize {
		return fmt.Errorf("%w: value of %d bytes, the limit is %d", ErrInvalid, len(v), s.opts.MaxValueSize)
	}
	return checkUTF8("value", v)
}

// Stats counts what a Store has done since it was created.
type Stats struct {
	Rebuilds     int64 // hash rebuilds this Store ran, one database query each
	RebuildWaits int64 // reads that waited for another process's rebuild
	RebuildsLost int64 // rebuilds refused because the hash was deleted meanwhile (the table is read again)
	Repairs      int64 // foreign or corrupt hash entries that reads replaced from the database
	MirrorErrors int64 // committed writes that could not be copied into the hash
	Reconciles   int64 // Reconcile calls that completed
	Fixes        int64 // hash fields that Reconcile repaired

	// DBFallbacks counts reads (Get, All) that Redis failed and the table
	// answered; FallbackQueries the table reads run for them. Concurrent
	// fallbacks share a read, so FallbackQueries is the smaller, except
	// that a read that failed, or whose readers all gave up, counts in
	// FallbackQueries only.
	DBFallbacks     int64
	FallbackQueries int64
}

type counters struct {
	rebuilds, rebuildWaits, rebuildsLost, repairs, mirrorErrors, reconciles, fixes atomic.Int64
	dbFallbacks, fallbackQueries                                                   atomic.Int64
}

// Stats returns a snapshot of the Store's counters.
func (s *Store) Stats() Stats {
	c := &s.stats
	return Stats{
		Rebuilds:     c.rebuilds.Load(),
		RebuildWaits: c.rebuildWaits.Load(),
		RebuildsLost: c.rebuildsLost.Load(),
		Repairs:      c.repairs.Load(),
		MirrorErrors: c.mirrorErrors.Load(),
		Reconciles:   c.reconciles.Load(),
		Fixes:        c.fixes.Load(),

		DBFallbacks:     c.dbFallbacks.Load(),
		FallbackQueries: c.fallbackQueries.Load(),
	}
}
