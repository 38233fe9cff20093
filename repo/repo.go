package repo

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/rowchange"
)

// Repository is a typed repository of the rows of T, keyed by ID, that
// reads through a cacheaside.Entity. It is safe for concurrent use. A
// Repository returned by WithTx is a view bound to one transaction.
type Repository[T any, ID comparable] struct {
	c  *core[T, ID]
	tx *Tx // nil outside a transaction
	// rowSource hands package repo/cdc the repository's table
	// (cdc.Invalidator.Register finds it here, not in a registry).
	rowSource
}

// rowSource is rowchange.Source under a name that keeps it out of the
// repository's documented API.
type rowSource = rowchange.Source

// core is what every view of a repository shares; immutable after New.
type core[T any, ID comparable] struct {
	db    *gorm.DB // a clean session on the caller's database
	name  string
	sch   *schema.Schema
	pk    *schema.Field
	idKey idCodec[ID]
	ent   *cacheaside.Entity[T]
	cache *cacheaside.Cache // the entities' cache
	// byKey is Get's loader outside a transaction, made once (nil for ids
	// that cannot be parsed back from their cache id: Get then makes one
	// per call).
	byKey   func(ctx context.Context, key string) (T, error)
	filter  *bloom.Filter // over primary keys; nil without Options.Filter
	lookups []*lookup[ID] // one per unique key of the model
	uniq    *lookup[ID]   // InsertIfAbsent's key; nil when uniqErr says why
	uniqErr error
	batch   int
	// softDel is the gorm.DeletedAt column, nil without one: Create may
	// then take over a soft-deleted row's primary key.
	softDel *schema.Field
	// claimErr is why New could not check the entity's owner (Claim).
	claimErr error
	shape    shape         // of the cache, for planChange
	readCols clause.Select // the SELECT list of a row read (selectCols)
	// reportAfterCommit is Options.AfterCommitErrors.
	reportAfterCommit bool
	// writeThrough is Options.WriteThrough, off for a T with AfterFind.
	writeThrough bool
	// logStores is Options.LogStores, off for a T with AfterFind, on
	// a database other than PostgreSQL, or where logStorable says no.
	logStores bool
	// reads routes the loads of misses to replicas; nil without one.
	reads *reads
	// lists are the queries declared by NewQuery (the one field that
	// changes after New; it guards itself).
	lists queryList
	// fedByLog says that a repo/cdc Invalidator of this process has the
	// table registered (feed.FedByLog): the lists may lag the table by the
	// Invalidator's lag, so a write re-asserts its row's place (see
	// rowChange.reassert).
	fedByLog atomic.Bool
}

// New returns the repository of T's table. T must be a GORM model with a
// single-column primary key whose Go type is ID. A nil cache or db, or a
// model it cannot use, is an error matching ErrInvalid. opts may be nil
// (the defaults); the caller's Options are copied, never changed. New claims
// the entity's name in the Cache's namespace (Options.Ownership): when
// another database's or table's repository holds it, New fails with
// ErrNamespaceCollision.
func New[T any, ID comparable](db *gorm.DB, cache *cacheaside.Cache, opts *Options) (*Repository[T, ID], error) {
	if db == nil || cache == nil {
		return nil, fmt.Errorf("%w: nil *gorm.DB or *cacheaside.Cache", ErrInvalid)
	}
	// A private cache store: ParseIndexes writes to the parsed fields, and
	// GORM's shared copy may be in use by other goroutines.
	sch, err := schema.Parse(new(T), &sync.Map{}, db.NamingStrategy)
	if err != nil {
		return nil, fmt.Errorf("%w: parse model %T: %w", ErrInvalid, *new(T), err)
	}
	if len(sch.PrimaryFields) != 1 {
		return nil, fmt.Errorf("%w: model %s has %d primary key columns, a repository needs exactly one", ErrInvalid, sch.Name, len(sch.PrimaryFields))
	}
	pk := sch.PrimaryFields[0]
	if idt := reflect.TypeFor[ID](); pk.FieldType != idt {
		return nil, fmt.Errorf("%w: primary key %s.%s is a %v, not a %v", ErrInvalid, sch.Name, pk.Name, pk.FieldType, idt)
	}
	idKey, err := newIDCodec[ID]()
	if err != nil {
		return nil, err
	}
	var given Options
	if opts != nil {
		given = *opts
	}
	if given.FilterClient == nil {
		given.FilterClient = cache.Client()
	}
	o, err := given.withDefaults(sch.Table)
	if err != nil {
		return nil, err
	}
	collision, unchecked := claimName(db, cache, sch, o.Name, o.Ownership)
	if collision != nil {
		return nil, collision
	}
	c := &core[T, ID]{
		db:                db.Session(&gorm.Session{NewDB: true}),
		name:              o.Name,
		sch:               sch,
		pk:                pk,
		idKey:             idKey,
		cache:             cache,
		batch:             o.BatchSize,
		reportAfterCommit: o.AfterCommitErrors,
		writeThrough:      o.WriteThrough && !sch.AfterFind,
	}
	c.logStores = o.LogStores && !sch.AfterFind && db.Dialector != nil && db.Dialector.Name() == "postgres" && logStorable(sch)
	c.claimErr = unchecked
	if c.reads, err = newReads(db, o); err != nil {
		return nil, err
	}
	if dec := newIDDecoder[ID](); dec != nil {
		base := &Repository[T, ID]{c: c}
		c.byKey = func(ctx context.Context, key string) (T, error) {
			id, err := dec(key)
			if err != nil {
				var zero T
				return zero, fmt.Errorf("%w: cache id %q: %w", ErrInvalidID, key, err)
			}
			return base.loadOne(ctx, key, id)
		}
	}
	for _, f := range sch.Fields {
		if f.DBName != "" && f.FieldType == reflect.TypeFor[gorm.DeletedAt]() {
			c.softDel = f
			break
		}
	}
	if err := c.initLookups(cache, o); err != nil {
		return nil, err
	}
	pol := o.Policy
	if o.Filter != nil {
		if c.filter, err = bloom.New(o.FilterClient, o.Name, c.filterOptions(o, nil)); err != nil {
			return nil, fmt.Errorf("%w: filter: %w", ErrInvalid, err)
		}
		pol.Filter = c.filter
	}
	if c.ent, err = cacheaside.NewEntity[T](cache, o.Name, pol); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c.shape = c.shapeOf()
	c.readCols = readColumns(sch)
	return &Repository[T, ID]{c: c, rowSource: rowchange.NewSource(&feed[T, ID]{c: c, base: &Repository[T, ID]{c: c}})}, nil
}

// Name returns the entity's name in Redis keys.
func (r *Repository[T, ID]) Name() string { return r.c.name }

// Table returns T's table.
func (r *Repository[T, ID]) Table() string { return r.c.sch.Table }

// Stats returns the counters of the entity cache.
func (r *Repository[T, ID]) Stats() cacheaside.Stats { return r.c.ent.Stats() }

// WithTx returns a view of the repository bound to tx: its writes run in
// the transaction and their invalidations wait for its commit, and its
// reads query the transaction directly (uncached), so that they see the
// transaction's own writes and never put uncommitted rows in the cache.
func (r *Repository[T, ID]) WithTx(tx *Tx) *Repository[T, ID] {
	return &Repository[T, ID]{c: r.c, tx: tx, rowSource: r.rowSource}
}

// DB returns a *gorm.DB on T's table, bound to ctx and, in a WithTx view,
// to the transaction: the escape hatch for queries the repository does not
// cover. They are not cached, and writes made through it invalidate
// nothing.
func (r *Repository[T, ID]) DB(ctx context.Context) *gorm.DB {
	return r.conn(ctx).Model(new(T))
}

// conn is the database a call runs on: the transaction's, or the base one.
func (r *Repository[T, ID]) conn(ctx context.Context) *gorm.DB {
	if r.tx != nil {
		return r.tx.db.WithContext(ctx)
	}
	return r.c.primary(ctx)
}

// pkEq is the condition "primary key = v".
func (c *core[T, ID]) pkEq(v any) clause.Eq {
	return clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: c.pk.DBName}, Value: v}
}

// cacheID returns id's cache id, checked against the entity's key rules
// (not empty, at most 1024 bytes): writes check it before they touch the
// database, so that no row is written that the repository cannot read or
// invalidate.
func (c *core[T, ID]) cacheID(id ID) (string, error) {
	key, err := c.idKey(id)
	if err != nil {
		return "", err
	}
	if _, err := c.ent.Key(key); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrInvalidID, c.name, err)
	}
	return key, nil
}

// idOf returns the primary key of row.
func (c *core[T, ID]) idOf(ctx context.Context, row *T) (ID, bool) {
	v, zero := c.pk.ValueOf(ctx, reflect.ValueOf(row).Elem())
	id, _ := v.(ID)
	return id, !zero
}
