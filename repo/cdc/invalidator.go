package cdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/backoff"
)

// Target is a repository whose table the Invalidator follows: a
// *repo.Repository of any type (Register refuses anything else). Its
// Table names the table, optionally schema-qualified ("public.users");
// unqualified names are resolved on the server's search_path.
type Target interface {
	Table() string
}

// Invalidator follows PostgreSQL's write-ahead log through logical
// replication and applies every committed change of the registered tables
// to the cache. Create it with New, Register the repositories, then Run
// it (in every process of the service: one applies, the others stand by).
type Invalidator struct {
	dsn  string
	repl *pgconn.Config // dsn with replication=database
	o    Options

	mu      sync.Mutex       // guards targets, tables and running
	targets []table          // as registered
	tables  map[string]table // by "schema.table", filled by Setup
	running bool

	ctr       counters
	pgVersion atomic.Int32 // server_version_num, read by Setup

	waitMu  sync.Mutex    // guards advance
	advance chan struct{} // closed (and replaced) when Applied or the slot's position moves
	waiters atomic.Int32  // Wait calls in progress
	watch   slotWatch     // the slot's confirmed position, for Wait calls while another process holds it
	// reportSoon asks the reader to report the applied position at once:
	// the applier set it on a Wait call's message (see wait.go).
	reportSoon atomic.Bool
	// warned holds the tables and columns whose decoding failure was
	// logged (warnOnce).
	warned sync.Map
	// noWaitMessage, for tests only, makes Wait write no message to the
	// log: another process's Wait then returns only at the holder's next
	// regular report.
	noWaitMessage bool

	// afterApply, when set (by tests), runs after a transaction's changes
	// were applied and before its position counts as applied; an error
	// ends the session there, as a crash would.
	afterApply func(end LSN) error
	// ignoreVisibility, for tests only, applies a transaction as soon as
	// it is decoded; onInvisible, when set (by tests), runs each time a
	// snapshot shows a transaction the applier waits for still invisible.
	ignoreVisibility bool
	onInvisible      func()
	// retryBackoff, when set (by tests), is every wait between two tries
	// to apply; noRedisProbe, for tests only, waits them out whether or
	// not Redis answers meanwhile.
	retryBackoff time.Duration
	noRedisProbe bool
	// noRecoveryGate, for tests only, adds no CatchUp to the
	// repositories' caches (see addGates).
	noRecoveryGate bool
	// gated is the recovery gate inv added to each cache (guarded by mu).
	gated map[*cacheaside.Cache]func()
}

// New returns an Invalidator of the database at dsn (a URL or key=value
// connection string of a role with the REPLICATION attribute, or the
// owner of the tables for Setup). opts may be nil.
func New(dsn string, opts *Options) (*Invalidator, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: dsn: %w", ErrInvalid, err)
	}
	cfg.RuntimeParams["replication"] = "database"
	return &Invalidator{dsn: dsn, repl: cfg, o: o, advance: make(chan struct{})}, nil
}

// Register adds repositories to follow. Call it before Setup and Run; two
// targets of the same table, or a target that is not a *repo.Repository
// (a WithTx view is not one either), are an error matching
// ErrInvalid.
//
// Register the repositories in every process that writes through them,
// whether or not it runs the Invalidator: a registered repository with
// cached queries knows that its lists lag the table by the Invalidator's
// lag, and its writes re-assert their rows' places in the lists they
// stay in, so that a write that completes on top of a plain-SQL move not
// yet applied leaves the row listed where it wrote it (see "Cached
// queries" in package repo). What that costs a write that leaves its row
// in place: the list's generation read before its statement (pipelined
// with the other reads, if any) and one line after its COMMIT, as for a
// move; a list takes 32 lines before the next write bumps it.
func (inv *Invalidator) Register(targets ...Target) error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.running {
		return fmt.Errorf("%w: Register after Run", ErrInvalid)
	}
	for _, target := range targets {
		t, ok := lookup(target)
		if !ok {
			return fmt.Errorf("%w: %T is not a repository made by repo.New", ErrInvalid, target)
		}
		for _, have := range inv.targets {
			if have.Table() == t.Table() {
				return fmt.Errorf("%w: table %s registered twice", ErrInvalid, t.Table())
			}
		}
		inv.targets = append(inv.targets, t)
		t.FedByLog()
	}
	inv.addGates()
	return nil
}

// Stats returns the Invalidator's counters and gauges.
func (inv *Invalidator) Stats() Stats { return inv.ctr.snapshot() }

// Run follows the log until ctx is done, then returns nil. It sets up the
// publication and the slot (Setup), then takes the slot: when another
// process holds it, Run stands by, checks every StandbyRetry, so
// that it takes over within about that long once the holder is gone (its
// connection closed; a hung holder's after the server's
// wal_sender_timeout). Errors (database or Redis unreachable) are counted
// in Stats and retried with backoff, never skipped past: the slot's
// position only moves over what was applied.
//
// Register and Run keep each registered repository's cache from serving
// entries that may predate changes not yet applied: from Register on, and
// from every Redis failure the process sees, its reads go to the database
// until CatchUp passes (by whichever process holds the slot), then use
// the cache again (see cacheaside.RecoveryGate; Cache.WaitRecovered waits
// for it). So a process that registers must run Run, or another process
// must hold the slot; when Run returns the gates are removed.
//
// Failures are logged with log/slog's default logger: a warning at the
// first (a server without wal_level=logical, an unreachable database),
// with the error and the attempts so far, then at most one per
// FailureLogInterval while they go on; and an Info once the process takes
// the slot, or stands by behind another process, again.
func (inv *Invalidator) Run(ctx context.Context) error {
	inv.mu.Lock()
	if inv.running {
		inv.mu.Unlock()
		return errors.New("cdc: Run called twice")
	}
	inv.running = true
	inv.addGates()
	inv.mu.Unlock()
	rl := runLog{slot: inv.o.Slot}
	inv.ctr.active.onTake = func() { rl.recovered("applying") }
	defer func() {
		inv.ctr.active.onTake = nil
		inv.mu.Lock()
		inv.running = false
		inv.removeGates()
		inv.mu.Unlock()
	}()
	b := backoff.New(minBackoff, inv.o.MaxBackoff)
	for ctx.Err() == nil {
		held, err := inv.session(ctx)
		if held { // a holder that lost its connection retries at once
			b.Reset()
		}
		var waitErr error
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errSlotBusy):
			rl.recovered("standing by")
			b.Reset()
			waitErr = inv.standBy(ctx)
		default:
			inv.ctr.fail(err, false)
			rl.failed(err)
			waitErr = b.Wait(ctx)
		}
		if waitErr != nil {
			return nil
		}
	}
	return nil
}

// FailureLogInterval is the least time between two warnings of Run while
// its sessions keep failing.
const FailureLogInterval = time.Minute

// runLog is what Run logs of its failures: a warning at the first of a
// run of failed sessions and at most one per FailureLogInterval after
// it (across runs, so that a flapping connection logs little), and an
// Info at the end of a run that was warned of. Run's goroutine alone
// uses it.
type runLog struct {
	slot     string
	attempts int       // failed sessions since the last recovery
	warned   time.Time // of the last warning; zero if none
	told     bool      // this run of failures was warned of
}

func (l *runLog) failed(err error) {
	l.attempts++
	if now := time.Now(); l.warned.IsZero() || now.Sub(l.warned) >= FailureLogInterval {
		l.warned, l.told = now, true
		slog.Warn("asidekit: cdc: cannot follow the log; retrying",
			"slot", l.slot, "attempts", l.attempts, "err", err)
	}
}

// recovered ends a run of failures: the process is applying, or standing
// by (what says which).
func (l *runLog) recovered(what string) {
	if l.told {
		slog.Info("asidekit: cdc: following the log again, "+what,
			"slot", l.slot, "failed_attempts", l.attempts)
	}
	l.attempts, l.told = 0, false
}
