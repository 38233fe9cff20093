package inspect

import (
	"math"
	"sync"
	"time"
)

// Stats are the counts of one run, or of many (Counter).
type Stats struct {
	// Runs is the number of runs counted (Counter only).
	Runs int64
	// Inspected is the number of items judged. Inspected = Consistent +
	// Violations().
	Inspected  int64
	Consistent int64
	// Violations by kind.
	Stale, Ghost, FalseNotFound, DivergentMapping, Corrupt int64
	// Suspects is how many disagreements were seen at a first look.
	Suspects int64
	// Skipped counts items that could not be judged (Skip).
	Skipped int64
	// Repaired counts the violations repaired.
	Repaired int64
}

// Of returns the count of violations of kind k.
func (s Stats) Of(k Kind) int64 {
	switch k {
	case Stale:
		return s.Stale
	case Ghost:
		return s.Ghost
	case FalseNotFound:
		return s.FalseNotFound
	case DivergentMapping:
		return s.DivergentMapping
	case Corrupt:
		return s.Corrupt
	}
	return 0
}

// Violations is the number of violations, of every kind.
func (s Stats) Violations() int64 {
	return s.Stale + s.Ghost + s.FalseNotFound + s.DivergentMapping + s.Corrupt
}

// Nines is Nines(s.Inspected, s.Violations()).
func (s Stats) Nines() float64 { return Nines(s.Inspected, s.Violations()) }

// Nines is the consistency measured, in nines: -log10(violations /
// inspected), so 3 means 99.9 % of the items judged were consistent. With
// no violation it is log10(inspected), the most that the sample can show
// (0 when nothing was inspected).
func Nines(inspected, violations int64) float64 {
	switch {
	case inspected == 0:
		return 0
	case violations == 0:
		return math.Log10(float64(inspected))
	}
	return 0 - math.Log10(float64(violations)/float64(inspected)) // 0 - x: +0, not -0, when all are violations
}

// add counts one judged item: kind Consistent, or a violation's.
func (s *Stats) add(k Kind) {
	s.Inspected++
	switch k {
	case Consistent:
		s.Consistent++
	case Stale:
		s.Stale++
	case Ghost:
		s.Ghost++
	case FalseNotFound:
		s.FalseNotFound++
	case DivergentMapping:
		s.DivergentMapping++
	case Corrupt:
		s.Corrupt++
	}
}

// Report is the outcome of one run.
type Report struct {
	Stats
	// Found lists the violations (the first Options.MaxFound), in the
	// order they were confirmed.
	Found []Finding
	// Complete reports that every walk reached its end, rather than For,
	// Max or ctx stopping it.
	Complete bool
	// Elapsed is the run's duration.
	Elapsed time.Duration
	// RepairErr is the first error of a RepairFunc (nil without Repair).
	RepairErr error
}

// Finding is one violation: its second look (its first without a second
// look), Cached and Stored cut to 256 bytes.
type Finding struct {
	Look
	// Repaired reports that its RepairFunc succeeded.
	Repaired bool
}

// Progress is where a run stands (Options.Progress).
type Progress struct {
	Stats // so far
	// Pending is the number of suspects waiting for their second look.
	Pending int
	// Taken reports that the run takes no more items: the Pending
	// suspects are all that is left.
	Taken bool
}

// Counter accumulates the counts of runs (Options.Counter). The zero value
// is ready; it is safe for concurrent use.
type Counter struct {
	mu sync.Mutex
	s  Stats // guarded by mu
}

// Stats returns the counts so far.
func (c *Counter) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

func (c *Counter) update(f func(*Stats)) {
	c.mu.Lock()
	f(&c.s)
	c.mu.Unlock()
}
