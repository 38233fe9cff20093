package repo

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asidekit/asidekit/internal/inspect"
)

// InspectOptions bound one run of Inspect. The zero value is usable: every
// field documents its default.
type InspectOptions struct {
	// Rate is the most SQL reads per second the run makes (each judged
	// cache entry costs one, each page of the filter walk one). Default 50
	// (DefaultInspectRate); it may not be negative.
	Rate float64
	// For is how long the run samples; the suspects it found are then
	// confirmed (up to Grace more). Default 0: until one walk of the
	// entity's cached entries (and of the table, for the filter) is done.
	For time.Duration
	// Max is the most items the run judges. Default 0: no limit.
	Max int
	// Grace is how long a suspect must last before it counts: a second
	// look Grace after the first must find the same cached entry (the same
	// version token, the same bytes) still disagreeing with the database,
	// so that a write whose invalidation is in flight (repo's after-commit
	// work, or CDC's lag) is not reported. Set it above the CDC lag you
	// alert on. Default 5s (DefaultInspectGrace).
	Grace time.Duration
	// Repair invalidates every violation found (a Bloom filter's missing
	// id is added to it). Default false: report only.
	Repair bool
	// Logger receives one Warn line per violation (kind, entity, key, id,
	// version token, cached and stored values). Default slog.Default().
	Logger *slog.Logger
	// Stats, when set, accumulates the run's counts as it goes (for a
	// metrics collector, across runs). Default nil.
	Stats *InspectCounter
	// SampleSize is the SCAN COUNT hint and the filter walk's page size.
	// Default 100.
	SampleSize int
}

// Defaults of InspectOptions.
const (
	DefaultInspectRate  = 50
	DefaultInspectGrace = 5 * time.Second
)

func (o InspectOptions) withDefaults() (InspectOptions, error) {
	switch {
	case o.Rate < 0, o.For < 0, o.Max < 0, o.Grace < 0, o.SampleSize < 0:
		return o, fmt.Errorf("%w: InspectOptions: negative Rate, For, Max, Grace or SampleSize", ErrInvalid)
	}
	if o.Rate == 0 {
		o.Rate = DefaultInspectRate
	}
	if o.Grace == 0 {
		o.Grace = DefaultInspectGrace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SampleSize == 0 {
		o.SampleSize = 100
	}
	return o, nil
}

// Inspect compares what the cache holds with the database, at a bounded
// rate, and reports the entries that break the promise that a read never
// returns a value older than a completed write:
//
//   - stale: a cached row that differs from the database's;
//   - ghost: a cached row the database no longer has;
//   - false not-found: a cached "not found" for a row that exists, or an
//     existing row the Bloom filter (Options.Filter) says is absent;
//   - divergent mapping: a cached unique-key mapping (GetBy) that points
//     to a row that does not hold that value, or caches "not found" for a
//     value a row holds.
//
// It samples cached entries with SCAN (never KEYS; on every master of a
// Cluster), reads them without side effects (cacheaside's Peek: no lease,
// no fill), and reads rows through the repository's database (the
// primary). A disagreement is a suspect until a second look, Grace later,
// finds the same entry still disagreeing (see InspectOptions.Grace): an
// invalidation in flight is not a violation. Each violation is logged; with
// Repair it is invalidated. The report holds the counts and the first
// violations.
//
// Inspect is for a Repository outside a transaction; its ids must parse
// back from their cache ids (integers, strings, or IDs whose pointer is an
// encoding.TextUnmarshaler). It returns ctx's error if ctx ends first,
// with the report so far.
func (r *Repository[T, ID]) Inspect(ctx context.Context, opts InspectOptions) (InspectReport, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return InspectReport{}, err
	}
	if r.tx != nil {
		return InspectReport{}, fmt.Errorf("%w: %s: Inspect in a transaction", ErrInvalid, r.c.name)
	}
	dec := inspectDecoder[ID]()
	if dec == nil {
		return InspectReport{}, fmt.Errorf("%w: %s: Inspect cannot parse a %T back from its cache id", ErrInvalid, r.c.name, *new(ID))
	}
	in := &inspection[T, ID]{r: r, o: o, dec: dec, run: inspect.New(o.core())}
	rep, err := in.run.Do(ctx, in.walks()...)
	return inspectReport(r.c.name, rep), err
}

// core returns the inspector's options of o (defaults filled).
func (o InspectOptions) core() inspect.Options {
	c := inspect.Options{Rate: o.Rate, For: o.For, Max: o.Max, Grace: o.Grace, SampleSize: o.SampleSize,
		Repair: o.Repair, MaxFound: maxFound, Logger: o.Logger}
	if o.Stats != nil {
		c.Counter = &o.Stats.c
	}
	return c
}
