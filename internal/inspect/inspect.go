// Package inspect is the inspector's core, shared by repo's typed
// Repository.Inspect and the asidekit command's inspect: it walks cached
// entries (and any other source of items) at a bounded rate of SQL reads,
// makes each disagreement with the database a suspect, counts a suspect as
// a violation only when a second look, Grace later, sees the same entry
// still disagreeing the same way, logs and repairs violations, and counts.
//
// It knows nothing of rows: a caller's LookFunc peeks one entry, reads the
// database and says what it saw (a Look and its Kind). repo judges typed
// rows with its codec; the command judges JSON documents.
package inspect

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// Kind is a look's verdict: Consistent, Skip, or a kind of violation.
type Kind int

const (
	// Skip: the item cannot be judged (gone, a lease with no entry, an
	// undecodable entry); it is counted as Skipped, not as inspected.
	Skip Kind = -1
	// Consistent: the cache agrees with the database.
	Consistent Kind = 0
	// Stale: a cached row differs from the database's.
	Stale Kind = 1
	// Ghost: a cached row the database does not have.
	Ghost Kind = 2
	// FalseNotFound: a cached "not found", or a Bloom filter's "absent",
	// for a row that exists.
	FalseNotFound Kind = 3
	// DivergentMapping: a cached unique-key mapping that disagrees with
	// the database.
	DivergentMapping Kind = 4
	// Corrupt: an entry that is not of the library's format (the command
	// reports it; repo skips it, as a Get deletes it).
	Corrupt Kind = 5
)

// Kinds are the kinds of violation, in the order reports list them.
var Kinds = [...]Kind{Stale, Ghost, FalseNotFound, DivergentMapping, Corrupt}

// String returns the kind's name: "stale", "ghost", "false not-found",
// "divergent mapping", "corrupt", "consistent" or "skip".
func (k Kind) String() string {
	switch k {
	case Skip:
		return "skip"
	case Consistent:
		return "consistent"
	case Stale:
		return "stale"
	case Ghost:
		return "ghost"
	case FalseNotFound:
		return "false not-found"
	case DivergentMapping:
		return "divergent mapping"
	case Corrupt:
		return "corrupt"
	}
	return "unknown"
}

// Look is what one look at an item saw.
type Look struct {
	Kind Kind
	// Entity is the cache entity (a repository's name, or a mapping's);
	// ID the item's id in it.
	Entity, ID string
	// Entry is the cache entry as peeked; the zero Peeked for an item
	// with no entry (a Bloom filter probe). Two looks agree on the entry
	// when their Entries hold the same version token and bytes.
	Entry Entry
	// Cached and Stored are what the cache and the database hold, as text
	// for a report (cut to 256 bytes in a Finding and the log).
	Cached, Stored string
	// Verdict is a sentence on the disagreement (optional).
	Verdict string
}

// As returns l with Kind k.
func (l Look) As(k Kind) Look {
	l.Kind = k
	return l
}

// LookFunc looks at the item id now. It calls Run.Pace before each SQL
// read; its errors end the run, as they are.
type LookFunc func(ctx context.Context, id string) (Look, error)

// RepairFunc fixes an item found in violation (invalidates its entry, adds
// it to a filter). An error leaves the violation unrepaired; the first one
// is Report.RepairErr.
type RepairFunc func(ctx context.Context) error

// Options bound one Run. The zero value runs one walk of every source,
// unpaced, and confirms suspects at once.
type Options struct {
	// Rate is the most SQL reads per second (Run.Pace). 0: no limit.
	Rate float64
	// For is how long the run takes new items; suspects are then
	// confirmed (up to Grace more). 0: until every walk is done.
	For time.Duration
	// Max is the most items judged, suspects waiting included. 0: no
	// limit.
	Max int
	// Grace is how long after a first look the second one is made.
	Grace time.Duration
	// SampleSize is the SCAN COUNT hint of WalkEntries. 0: 100.
	SampleSize int
	// Repair calls each violation's RepairFunc.
	Repair bool
	// MaxFound is the most findings Report.Found lists. 0: all.
	MaxFound int
	// Logger, when set, receives one Warn line per violation.
	Logger *slog.Logger
	// Counter, when set, accumulates the counts as they change.
	Counter *Counter
	// Progress, when set, is called after each item taken, and once when
	// the taking ends with suspects still waiting for their second look.
	Progress func(Progress)
}

// Run is one inspection; it is used by one goroutine. Build the walks
// over it (WalkEntries, or a Walk of the caller's that uses Judge,
// Suspect, Count, Over and Pace), then call Do once.
type Run struct {
	o     Options
	every time.Duration // between SQL reads
	next  time.Time     // when the next SQL read may start
	stop  time.Time     // when taking items stops; zero: at the end of the walks
	rep   Report
	// suspects wait for their second look, in the order they were found
	// (so by due time).
	suspects []suspect
}

// suspect is a disagreement seen at a first look, confirmed or cleared by
// a second one.
type suspect struct {
	due    time.Time
	first  Look
	again  func(ctx context.Context) (Look, error)
	repair RepairFunc
}

// New returns a run with options o.
func New(o Options) *Run {
	if o.SampleSize <= 0 {
		o.SampleSize = 100
	}
	r := &Run{o: o}
	if o.Rate > 0 {
		r.every = time.Duration(float64(time.Second) / o.Rate)
	}
	return r
}

// Pace returns when the next SQL read may start (Options.Rate), or ctx's
// error.
func (r *Run) Pace(ctx context.Context) error {
	now := time.Now()
	if d := r.next.Sub(now); d > 0 {
		if err := backoff.Sleep(ctx, d); err != nil {
			return err
		}
		now = r.next
	}
	r.next = now.Add(r.every)
	return nil
}

// Over reports that the run must stop taking new items: For has passed,
// or Max items are judged or waiting.
func (r *Run) Over() bool {
	if r.o.Max > 0 && int(r.rep.Inspected)+len(r.suspects) >= r.o.Max {
		return true
	}
	return !r.stop.IsZero() && !time.Now().Before(r.stop)
}

// Do runs the walks in turn, one batch of each at a time, confirming the
// suspects that are due between batches, until every walk is done or the
// run is Over; then it confirms the suspects left. It returns the report,
// and ctx's error if ctx ends first (with the report so far), or the first
// error of a walk or a look.
func (r *Run) Do(ctx context.Context, walks ...Walk) (Report, error) {
	start := time.Now()
	if r.o.For > 0 {
		r.stop = start.Add(r.o.For)
	}
	err := r.walk(ctx, walks)
	if err == nil {
		if n := len(r.suspects); n > 0 && r.o.Progress != nil {
			r.o.Progress(Progress{Stats: r.rep.Stats, Pending: n, Taken: true})
		}
		err = r.confirm(ctx, true)
	}
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	r.rep.Elapsed = time.Since(start)
	if r.o.Counter != nil {
		r.o.Counter.update(func(s *Stats) { s.Runs++ })
	}
	return r.rep, err
}

func (r *Run) walk(ctx context.Context, walks []Walk) error {
	walks = append([]Walk(nil), walks...)
	for len(walks) > 0 && !r.Over() {
		for i := 0; i < len(walks); i++ {
			done, err := walks[i](ctx)
			if err != nil {
				return err
			}
			if done {
				walks = append(walks[:i], walks[i+1:]...)
				i--
			}
			if err := r.confirm(ctx, false); err != nil {
				return err
			}
		}
	}
	r.rep.Complete = len(walks) == 0
	return nil
}

// confirm gives the suspects that are due their second look; with all, it
// waits for every one.
func (r *Run) confirm(ctx context.Context, all bool) error {
	for len(r.suspects) > 0 {
		s := r.suspects[0]
		if d := time.Until(s.due); d > 0 {
			if !all {
				return nil
			}
			if err := backoff.Sleep(ctx, d); err != nil {
				return err
			}
		}
		r.suspects = r.suspects[1:]
		second, err := s.again(ctx)
		if err != nil {
			return err
		}
		if second.Kind != s.first.Kind {
			r.judged(Consistent) // resolved: an invalidation was in flight
			continue
		}
		r.violation(ctx, second, s.repair)
	}
	return nil
}

// judged counts an item whose verdict is final.
func (r *Run) judged(k Kind) {
	r.count(func(s *Stats) { s.add(k) })
}

func (r *Run) count(f func(*Stats)) {
	f(&r.rep.Stats)
	if r.o.Counter != nil {
		r.o.Counter.update(f)
	}
}

// violation counts, logs and (with Repair) fixes a confirmed violation.
func (r *Run) violation(ctx context.Context, lk Look, repair RepairFunc) {
	r.judged(lk.Kind)
	lk.Cached, lk.Stored = cut(lk.Cached), cut(lk.Stored)
	f := Finding{Look: lk}
	if r.o.Repair {
		if err := repair(ctx); err != nil {
			if r.rep.RepairErr == nil {
				r.rep.RepairErr = err
			}
		} else {
			f.Repaired = true
			r.count(func(s *Stats) { s.Repaired++ })
		}
	}
	if r.o.Logger != nil {
		r.o.Logger.LogAttrs(ctx, slog.LevelWarn, "asidekit: cache inconsistency",
			slog.String("kind", lk.Kind.String()), slog.String("entity", lk.Entity), slog.String("key", lk.Entry.Key),
			slog.String("id", lk.ID), slog.String("version", lk.Entry.Version), slog.String("cached", lk.Cached),
			slog.String("stored", lk.Stored), slog.Bool("repaired", f.Repaired))
	}
	if r.o.MaxFound <= 0 || len(r.rep.Found) < r.o.MaxFound {
		r.rep.Found = append(r.rep.Found, f)
	}
}

// cut shortens s to 256 bytes for a report.
func cut(s string) string {
	if len(s) > 256 {
		return s[:256] + "…"
	}
	return s
}

// Entry is what a look saw of a cache entry (from cacheaside's Peek):
// enough to name it in a report and to tell whether two looks saw the
// same store.
type Entry struct {
	Key, Version string
	State        int    // the cache's code for what the entry is
	Raw          []byte // the entry as stored; nil when there is none
}

// SameEntry reports whether two looks saw the same store: the same version
// token, state and bytes.
func SameEntry(a, b Entry) bool {
	return a.Version == b.Version && a.State == b.State && bytes.Equal(a.Raw, b.Raw)
}

// secondLook reports whether suspects wait for a second look (see
// testswitch.SecondLookOff).
func secondLook() bool { return !testswitch.SecondLookOff.Load() }
