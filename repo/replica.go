package repo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sqlstate"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// Read replicas. A miss of Get or GetMany may load from a streaming
// replica: Options.ReadDB, or the replica dbresolver picks when it is
// registered on the repository's *gorm.DB. Everything else (writes, the
// reads before a write, InsertIfAbsent, GetBy, queries, filter rebuilds,
// transactions) stays on the primary: the *gorm.DB passed to New, whose
// own connection pool must reach the primary.
//
// A replica trails the primary: loaded right after a write's invalidation,
// it would return the old row, cached under the new version for the whole
// TTL. So every write records the WAL position of its commit in the
// invalidation (cacheaside.WithWriteLSN): a repository's write reads
// pg_current_wal_insert_lsn() on the primary once its commit has returned
// (a position at or past the end of its commit record), repo/cdc gives the
// commit record's position exactly. A miss loads from a replica only when
// the replica's replay position (pg_last_wal_replay_lsn(), the end of the
// last record it replayed) is at least the highest position recorded on
// the ids it loads: its snapshot, taken after that position was read, then
// sees those commits. The replay position is read at most once per
// Options.ReplicaPoll per replica, by a miss that needs a newer one, never
// once per miss; a replay position only grows, so an old reading is a safe
// lower bound. Otherwise the load goes to the primary (counted in
// ReadStats). A replica that is down, failed a load, was promoted or
// reports no replay position is skipped until a later reading says it
// is a replica again; its loads go to the primary, never an error.
//
// A position that could not be read is never taken for 0: the load goes
// to the primary (counted as RedirectedUnknown). cacheaside.RequiredLSN
// says UnknownLSN when the load runs without the cache (Redis failed, the
// breaker or the recovery gate is open, the id's invalidation is still
// pending), when the id's version was created by a miss (it may stand for
// one Redis lost, with the position of a write the load must see: a
// restart, a failover, an eviction), and when a write recorded
// UnknownLSN. A version created by a miss is not "never written": Redis
// cannot tell. So such a load reads the primary's position after it and
// hands it to cacheaside (LSNRecorder), whose fill stores it in the
// version: the next misses of the id may use a replica again once it has
// replayed that position. The cost is the first miss of an id whose
// version Redis does not hold (never read, idle longer than the version
// lives, or lost) on the primary, plus one query there for the position.

// DefaultReplicaPoll is the default Options.ReplicaPoll.
const DefaultReplicaPoll = 20 * time.Millisecond

// replicaMaxAge is how old a replica's last reading may be before the
// next load through it reads again (promotions and outages are noticed
// within it even when no write asks for a newer position).
const replicaMaxAge = time.Second

// replicaQueryTimeout bounds one reading of a replica's position.
const replicaQueryTimeout = time.Second

// Replica states.
const (
	replicaUnknown    int32 = iota // never read
	replicaOK                      // in recovery, with a replay position
	replicaNotStandby              // not in recovery (promoted, or a primary)
	replicaDown                    // the last reading or load failed
)

// replica is what a repository knows of one replica's progress.
type replica struct {
	pool   gorm.ConnPool
	mu     sync.Mutex // held by the one reading in flight
	lsn    atomic.Uint64
	state  atomic.Int32
	polled atomic.Int64 // Unix ns of the last reading's start
}

// ReadStats counts where a repository's cache misses loaded from, in this
// process. Without replicas every load is a PrimaryLoad.
type ReadStats struct {
	ReplicaLoads int64 // loads served by a replica
	PrimaryLoads int64 // loads served by the primary
	// RedirectedLag counts loads sent to the primary because the replica
	// had not replayed a write they must see.
	RedirectedLag int64
	// RedirectedUnavailable counts loads sent to the primary because the
	// replica was down, not in recovery or not read yet.
	RedirectedUnavailable int64
	// ReplicaErrors counts loads that failed on a replica and were run
	// again on the primary.
	ReplicaErrors int64
	// LagBytes is the WAL distance between the position a redirected load
	// needed and the replica's replay position, at the last redirect for
	// lag.
	LagBytes int64
	// RedirectedUnknown counts loads sent to the primary because the
	// position they must see could not be read (see "Read replicas" in
	// the package doc: Redis unreachable, the breaker or the recovery gate
	// open, a version Redis may have lost, a write of unknown position).
	RedirectedUnknown int64
	// WritePositionErrors counts the writes whose commit position could
	// not be read on the primary (see UnknownLSN), in this process: every
	// repository's and Transaction's, whichever repository reports it.
	WritePositionErrors int64
	// LoadPositions counts the queries of the primary's WAL position made
	// after loads of rows whose versions recorded none, in this process:
	// with replicas, one per such load; with Options.LogStores and no
	// replicas, one per such load that found no row (a load that found
	// one read the position in its own SELECT).
	LoadPositions int64
}

// reads routes a repository's loads; nil without replicas.
type reads struct {
	readDB   *gorm.DB // Options.ReadDB; nil with a resolver
	fixed    *replica // readDB's
	resolver bool     // dbresolver routes the *gorm.DB's reads
	pools    sync.Map // gorm.ConnPool → *replica, with a resolver
	poll     time.Duration
	// ignoreLSN loads every miss from the replica (tests only: shows the
	// stale fill the check prevents).
	ignoreLSN bool
	// ignoreUnknown takes a position that could not be read for 0 (tests
	// only: shows the stale fill that loading from the primary prevents).
	ignoreUnknown bool

	replicaLoads, primaryLoads, lag, unavailable, unknown, replicaErrs, lagBytes atomic.Int64
}

// replicasInUse is set once any repository has replicas: from then on
// a commit on a PostgreSQL database reads its position for the
// invalidations (see needsPosition).
var replicasInUse atomic.Bool

// needsPosition reports whether a commit on db reads its position: some
// repository of the process has replicas and db is PostgreSQL. A
// repository of the same process on another database (SQLite, MySQL) has
// no WAL position to read, and no replica of it reads one: reading it
// there failed and logged an error for every kind of failure.
func needsPosition(db *gorm.DB) bool {
	return replicasInUse.Load() && db.Dialector != nil && db.Dialector.Name() == "postgres"
}

// resolverCallback is the name of dbresolver's callback, which picks the
// connection pool of a statement.
const resolverCallback = "gorm:db_resolver"

// newReads returns the routing of a repository on db with o, or nil
// when it has no replica.
func newReads(db *gorm.DB, o Options) (*reads, error) {
	resolver := db.Callback().Query().Get(resolverCallback) != nil
	if o.ReadDB == nil && !resolver {
		return nil, nil
	}
	if o.ReadDB != nil && resolver {
		return nil, fmt.Errorf("%w: ReadDB is set and dbresolver is registered on the *gorm.DB: use one of them", ErrInvalid)
	}
	if err := checkReadDB(db, o.ReadDB); err != nil {
		return nil, err
	}
	rd := &reads{resolver: resolver, poll: o.ReplicaPoll}
	if o.ReadDB != nil {
		rd.readDB = o.ReadDB.Session(&gorm.Session{NewDB: true})
		rd.fixed = &replica{pool: o.ReadDB.ConnPool}
	} else {
		registerRouting(db)
	}
	replicasInUse.Store(true)
	return rd, nil
}

// stats returns the counters.
func (rd *reads) stats() ReadStats {
	return ReadStats{
		ReplicaLoads:          rd.replicaLoads.Load(),
		PrimaryLoads:          rd.primaryLoads.Load(),
		RedirectedLag:         rd.lag.Load(),
		RedirectedUnavailable: rd.unavailable.Load(),
		ReplicaErrors:         rd.replicaErrs.Load(),
		LagBytes:              rd.lagBytes.Load(),
		RedirectedUnknown:     rd.unknown.Load(),
		WritePositionErrors:   writePosErrors.Load(),
		LoadPositions:         loadPositions.Load(),
	}
}

// required is the write position a load in ctx must see: the highest the
// versions of its ids record, or a read-after token's; UnknownLSN when
// either could not be read (cacheaside.RequiredLSN: the load runs
// without the cache, or a version records no position).
func required(ctx context.Context) uint64 {
	return max(cacheaside.RequiredLSN(ctx), tokenOf(ctx))
}

// admit reports whether a load that must see position need may run on p,
// reading p's position first when the last reading is too old for it;
// when not, it counts the redirect.
func (rd *reads) admit(ctx context.Context, p *replica, need uint64) bool {
	if rd.ignoreLSN || testswitch.ReplicaLSNOff.Load() {
		need = 0
	}
	if need == UnknownLSN && rd.ignoreUnknown {
		need = 0
	}
	if need == UnknownLSN {
		rd.unknown.Add(1)
		return false
	}
	now := time.Now().UnixNano()
	fresh := now-p.polled.Load() < int64(replicaMaxAge)
	if p.state.Load() == replicaOK && p.lsn.Load() >= need && fresh {
		return true
	}
	if now-p.polled.Load() >= int64(rd.poll) && p.mu.TryLock() {
		p.read(ctx)
		p.mu.Unlock()
	}
	if p.state.Load() != replicaOK {
		rd.unavailable.Add(1)
		return false
	}
	if have := p.lsn.Load(); have < need {
		rd.lag.Add(1)
		rd.lagBytes.Store(int64(min(need-have, math.MaxInt64)))
		return false
	}
	return true
}

// read reads p's replay position; the caller holds p.mu.
func (p *replica) read(ctx context.Context) {
	p.polled.Store(time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replicaQueryTimeout)
	defer cancel()
	var recovery bool
	var pos *string
	err := p.pool.QueryRowContext(ctx, "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text").Scan(&recovery, &pos)
	switch {
	case err != nil:
		p.state.Store(replicaDown)
	case !recovery || pos == nil:
		p.state.Store(replicaNotStandby)
	default:
		lsn, err := parseLSN(*pos)
		if err != nil {
			p.state.Store(replicaDown)
			return
		}
		p.lsn.Store(lsn)
		p.state.Store(replicaOK)
	}
}

// failed marks p down after a failed load: the next load reads it again
// before using it.
func (p *replica) failed() {
	p.state.Store(replicaDown)
}

// replicaFor returns the replica of a pool dbresolver picked.
func (rd *reads) replicaFor(pool gorm.ConnPool) *replica {
	if p, ok := rd.pools.Load(pool); ok {
		return p.(*replica)
	}
	p, _ := rd.pools.LoadOrStore(pool, &replica{pool: pool})
	return p.(*replica)
}

// run runs query, a load of a miss, on the connection it may use: a
// replica that has replayed what the load must see, else the primary
// (primary is the repository's *gorm.DB). A load that fails on a replica
// runs again on the primary.
func (rd *reads) run(ctx context.Context, primary *gorm.DB, query func(*gorm.DB) error) error {
	need := required(ctx)
	if rd.readDB != nil {
		if rd.admit(ctx, rd.fixed, need) {
			err := query(rd.readDB.WithContext(ctx))
			if err == nil {
				rd.replicaLoads.Add(1)
				return nil
			}
			if ctx.Err() != nil {
				return err
			}
			rd.fixed.failed()
			rd.replicaErrs.Add(1)
		}
		rd.primaryLoads.Add(1)
		err := query(primary.WithContext(ctx))
		if err == nil && need == UnknownLSN {
			recordLoadLSN(ctx, primary)
		}
		return err
	}
	rt := &route{reads: rd, need: need}
	err := query(primary.WithContext(context.WithValue(ctx, routeKey{}, rt)))
	if err != nil && rt.replica != nil && ctx.Err() == nil {
		rt.replica.failed()
		rd.replicaErrs.Add(1)
		rd.replicaLoads.Add(-1) // counted by the callback; it did not serve
		rd.primaryLoads.Add(1)
		rt.replica = nil
		err = query(primary.WithContext(context.WithValue(ctx, routeKey{}, primaryRoute)))
	}
	if err == nil && rt.replica == nil && need == UnknownLSN {
		recordLoadLSN(ctx, primary)
	}
	return err
}

// recordLoadLSN tells cacheaside, for a load of unknown position that ran
// on the primary, the primary's position read after it: at or past every
// write its miss could have to see, whose position Redis may have lost.
// The fill records it in the ids' versions, so that their next misses
// may load from a replica again, and repo/cdc may store their rows from
// the log (cacheaside.LSNRecorder, Options.LogStores). It costs one query
// on the primary, made only when the load's values will be stored.
func recordLoadLSN(ctx context.Context, primary *gorm.DB) {
	rec := cacheaside.LSNRecorder(ctx)
	if rec == nil || testswitch.ReplicaLSNOff.Load() {
		return
	}
	loadPositions.Add(1)
	if lsn, err := primaryLSN(ctx, primary); err == nil {
		rec(lsn)
	}
}

// loadPositions counts recordLoadLSN's queries (ReadStats.LoadPositions).
var loadPositions atomic.Int64

// route is a statement's routing, carried by its context to routeRead.
type route struct {
	reads   *reads // nil: the primary, always
	need    uint64
	replica *replica // set by routeRead when the statement ran on one
}

type routeKey struct{}

// primaryRoute keeps a statement on the primary.
var primaryRoute = &route{}

// primary returns the repository's *gorm.DB bound to ctx, its statements
// kept on the primary even when dbresolver would send them to a replica.
func (c *core[T, ID]) primary(ctx context.Context) *gorm.DB {
	if c.reads != nil && c.reads.resolver {
		ctx = context.WithValue(ctx, routeKey{}, primaryRoute)
	}
	return c.db.WithContext(ctx)
}

// load runs query, a load of a miss, on a replica when one may serve it
// (see run), else on the primary; in a transaction, on the transaction.
func (r *Repository[T, ID]) load(ctx context.Context, query func(*gorm.DB) error) error {
	if r.tx != nil {
		return query(r.conn(ctx))
	}
	if r.c.reads == nil { // with LogStores, loadRows reads the position
		return query(r.conn(ctx))
	}
	return r.c.reads.run(ctx, r.c.db, query)
}

var routingMu sync.Mutex

// routeName is the name of routeRead's callbacks.
const routeName = "asidekit:replica_route"

// registerRouting adds routeRead after dbresolver's callback to db's
// query, row and raw chains, once per set of callbacks.
func registerRouting(db *gorm.DB) {
	routingMu.Lock()
	defer routingMu.Unlock()
	if db.Callback().Query().Get(routeName) != nil {
		return
	}
	_ = db.Callback().Query().After(resolverCallback).Before("gorm:query").Register(routeName, routeRead)
	_ = db.Callback().Row().After(resolverCallback).Before("gorm:row").Register(routeName, routeRead)
	_ = db.Callback().Raw().After(resolverCallback).Before("gorm:raw").Register(routeName, routeRead)
}

// routeRead runs after dbresolver picked a statement's pool: a statement
// of a repository that must stay on the primary, or a load whose replica
// has not replayed what it must see, is moved to the *gorm.DB's own pool
// (the primary). Statements of others, and of transactions, are left
// alone.
func routeRead(db *gorm.DB) {
	if db.Error != nil || db.Statement.Context == nil {
		return
	}
	rt, _ := db.Statement.Context.Value(routeKey{}).(*route)
	if rt == nil {
		return
	}
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		return
	}
	home := db.Config.ConnPool
	if rt.reads == nil {
		db.Statement.ConnPool = home
		return
	}
	chosen := db.Statement.ConnPool
	if chosen == home {
		rt.reads.primaryLoads.Add(1)
		return
	}
	p := rt.reads.replicaFor(chosen)
	if rt.reads.admit(db.Statement.Context, p, rt.need) {
		rt.replica = p
		rt.reads.replicaLoads.Add(1)
		return
	}
	db.Statement.ConnPool = home
	rt.reads.primaryLoads.Add(1)
}

// ReadStats returns where the repository's cache misses loaded from.
func (r *Repository[T, ID]) ReadStats() ReadStats {
	if r.c.reads == nil {
		s := r.c.ent.Stats()
		return ReadStats{PrimaryLoads: int64(s.Loads + s.LoadErrors), LoadPositions: loadPositions.Load()}
	}
	return r.c.reads.stats()
}

// UnknownLSN is the position a write records when its commit's position
// could not be read (cacheaside.UnknownLSN): the loads of its ids, and of
// reads made with a WriteToken holding it (ReadAfter), go to the primary
// until a load there records the primary's position in the ids' versions.
// It is logged, once per kind of error, and counted
// (ReadStats.WritePositionErrors).
const UnknownLSN = cacheaside.UnknownLSN

// writePosErrors counts the positions writeLSN could not read.
var writePosErrors atomic.Int64

// writePosLogged holds the kinds of writeLSN errors logged already.
var writePosLogged sync.Map

// writeLSN returns the primary's WAL insert position, read after a
// commit: at or past the end of its commit record. It is 0 without
// replicas in the process or on a database other than PostgreSQL
// (nothing needs it), and UnknownLSN when it cannot be read.
// It is read on the *gorm.DB's own connection pool (the primary's: New
// refuses a ReadDB that shares it), outside GORM's callbacks, so that no
// resolver sends it to a replica.
func writeLSN(ctx context.Context, db *gorm.DB) uint64 {
	if !needsPosition(db) {
		return 0
	}
	lsn, err := primaryLSN(ctx, db)
	if err != nil {
		writePosErrors.Add(1)
		kind, ok := sqlstate.Of(err)
		if !ok { // the kind of error under read's wrapping
			under := err
			if u := errors.Unwrap(err); u != nil {
				under = u
			}
			kind = fmt.Sprintf("%T", under)
		}
		if _, seen := writePosLogged.LoadOrStore(kind, true); !seen {
			slog.Error("asidekit: the position of a commit could not be read on the primary; loads of the rows it wrote go to the primary (logged once per kind of error)",
				"kind", kind, "err", err)
		}
		return UnknownLSN
	}
	return lsn
}

// primaryLSN reads the WAL insert position on db's own connection pool.
func primaryLSN(ctx context.Context, db *gorm.DB) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replicaQueryTimeout)
	defer cancel()
	var pos string
	if err := db.Config.ConnPool.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&pos); err != nil {
		return 0, fmt.Errorf("read the primary's WAL position: %w", err)
	}
	lsn, err := parseLSN(pos)
	if err == nil && lsn == UnknownLSN {
		err = fmt.Errorf("WAL position %q out of range", pos)
	}
	return lsn, err
}

// afterCommitLSN records in w the position of the commit it follows (see
// writeLSN), and in ctx's write tracker (TrackWrites).
//
// A process without replicas reads no position, but its invalidations
// record UnknownLSN, not none: another process of the service may read
// the same rows from replicas (a fleet where only some processes set
// ReadDB), and a version that records no position would let it trust a
// replica that has not replayed this write. Its misses load from the
// primary instead, whose position the fill then records. A write CDC
// applies later keeps the version unknown (write.lua keeps the higher
// position), so a lagging Invalidator cannot lower it either.
func afterCommitLSN(ctx context.Context, db *gorm.DB, w interface{ SetLSN(uint64) }) {
	lsn := writeLSN(ctx, db)
	rec := lsn
	if rec == 0 {
		rec = UnknownLSN
		if unrecordedKnown.Load() {
			rec = 1 // a position every version's is at or past: trusted as none was
		}
	}
	w.SetLSN(rec)
	trackWrite(ctx, lsn)
}

// unrecordedKnown, set by tests only, records position 1 for a write
// whose process has no replicas, where it would record UnknownLSN (the
// rule off: write.lua makes a write of no position unknown itself).
var unrecordedKnown atomic.Bool

// parseLSN parses PostgreSQL's text form of a WAL position, "X/Y" (two
// hexadecimal numbers, the high and low 32 bits).
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("WAL position %q: no /", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("WAL position %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("WAL position %q: %w", s, err)
	}
	return h<<32 | l, nil
}
