package seqgen

import "sync/atomic"

// Stats are a Generator's counts since New (this process only).
type Stats struct {
	// Reserved counts segments reserved in the DB (one transaction each).
	Reserved uint64
	// Dropped counts reserved segments that were not installed in Redis
	// (the lease was lost, or the keys deleted); their numbers are skipped.
	Dropped uint64
	// BackgroundRefills counts reservations started in the background at
	// the refill threshold, while calls went on issuing numbers.
	BackgroundRefills uint64
	// SyncRefills counts calls that found the segment used up (or the day
	// not started) and reserved the next one themselves: they waited on
	// the DB.
	SyncRefills uint64
	// Waits counts the pauses of calls that found the segment used up
	// while another call or process held the reservation: they waited for
	// it.
	Waits uint64
	// Fallbacks counts calls served from a segment this process reserved
	// in the DB because Redis failed, passed Options.RedisTimeout, or was
	// skipped by the breaker.
	Fallbacks uint64
	// RedisErrors counts Redis calls that failed or passed
	// Options.RedisTimeout (not those the breaker skipped).
	RedisErrors uint64
	// Batches counts the rounds of joined Next calls: each began with one
	// script call for every call queued (up to Options.MaxBatch). Next
	// calls per batch is how much joining saves.
	Batches uint64
	// Abandoned counts numbers taken for joined Next calls whose caller
	// had left (its context ended) before they were handed out: skipped.
	Abandoned uint64
}

// counters are a Generator's Stats, updated atomically.
type counters struct {
	reserved, dropped, background, sync, waits atomic.Uint64
	fallbacks, redisErrors, batches, abandoned atomic.Uint64
}

// Stats returns the Generator's counts. A healthy generator shows
// BackgroundRefills close to Reserved, and few SyncRefills and Waits:
// the next segment is ready before the current one runs out.
func (g *Generator) Stats() Stats {
	c := &g.ctr
	return Stats{
		Reserved:          c.reserved.Load(),
		Dropped:           c.dropped.Load(),
		BackgroundRefills: c.background.Load(),
		SyncRefills:       c.sync.Load(),
		Waits:             c.waits.Load(),
		Fallbacks:         c.fallbacks.Load(),
		RedisErrors:       c.redisErrors.Load(),
		Batches:           c.batches.Load(),
		Abandoned:         c.abandoned.Load(),
	}
}
