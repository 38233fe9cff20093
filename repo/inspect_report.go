package repo

import (
	"time"

	"github.com/asidekit/asidekit/internal/inspect"
)

// InspectKind is the kind of a violation Inspect found.
type InspectKind int

const (
	// Stale: a cached row differs from the database's.
	Stale = InspectKind(inspect.Stale)
	// Ghost: a cached row the database deleted.
	Ghost = InspectKind(inspect.Ghost)
	// FalseNotFound: a cached "not found", or the Bloom filter's
	// "absent", for a row that exists.
	FalseNotFound = InspectKind(inspect.FalseNotFound)
	// DivergentMapping: a cached unique-key mapping that disagrees with the
	// database.
	DivergentMapping = InspectKind(inspect.DivergentMapping)
)

// String returns the kind's name: "stale", "ghost", "false not-found",
// "divergent mapping".
func (k InspectKind) String() string {
	if k < Stale || k > DivergentMapping {
		return "unknown"
	}
	return inspect.Kind(k).String()
}

// Violation is one confirmed inconsistency.
type Violation struct {
	Kind InspectKind
	// Entity is the cache entity: the repository's name, or a mapping's
	// ("users.by.email"); for a filter miss, the repository's name.
	Entity string
	// Key is the Redis key of the entry ("" for a filter miss), ID the
	// entity's cache id (the row's id, or the mapping's value).
	Key, ID string
	// Version is the entry's version token ("" when it has none).
	Version string
	// Cached and Stored are what the cache and the database hold, as text
	// (the codec's encoding, "not found", "absent from the filter"),
	// cut to 256 bytes.
	Cached, Stored string
	// Repaired reports that InspectOptions.Repair fixed it.
	Repaired bool
}

// InspectStats are the counts of one inspection, or of many (InspectCounter).
type InspectStats struct {
	// Runs is the number of Inspect calls counted (InspectCounter only).
	Runs int64
	// Inspected is the number of items judged: cached entries and filter
	// probes. Inspected = Consistent + Violations().
	Inspected  int64
	Consistent int64
	// Violations by kind.
	Stale, Ghost, FalseNotFound, DivergentMapping int64
	// Suspects is how many disagreements were seen at a first look; those
	// that a second look did not confirm count as Consistent.
	Suspects int64
	// Skipped counts sampled entries that could not be judged: gone by the
	// time they were read, a lease with no entry, a corrupt entry, a
	// mapping of several columns caching "not found".
	Skipped int64
	// Repaired counts the violations InspectOptions.Repair fixed.
	Repaired int64
}

// Violations is the number of confirmed violations, of every kind.
func (s InspectStats) Violations() int64 {
	return s.Stale + s.Ghost + s.FalseNotFound + s.DivergentMapping
}

// Nines is the consistency measured, in nines: -log10(violations /
// inspected), so 3 means 99.9 % of the items judged were consistent. With
// no violation it is log10(inspected), the most that the sample can show
// (0 when nothing was inspected).
func (s InspectStats) Nines() float64 { return inspect.Nines(s.Inspected, s.Violations()) }

// maxFound is the most violations an InspectReport lists.
const maxFound = 100

// InspectReport is the outcome of one Inspect call.
type InspectReport struct {
	InspectStats
	// Entity is the repository's name.
	Entity string
	// Found lists the first 100 violations.
	Found []Violation
	// Complete reports that every walk (cached entries, mappings, filter)
	// reached its end, rather than For, Max or ctx stopping it.
	Complete bool
	// Elapsed is the run's duration.
	Elapsed time.Duration
}

// InspectCounter accumulates the counts of Inspect runs
// (InspectOptions.Stats), for a metrics collector. The zero value is
// ready; it is safe for concurrent use.
type InspectCounter struct {
	c inspect.Counter
}

// Stats returns the counts so far.
func (c *InspectCounter) Stats() InspectStats { return inspectStats(c.c.Stats()) }
