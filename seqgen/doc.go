// Package seqgen issues daily business sequence numbers such as
// ORD2026112900001 (prefix, date, zero-padded counter) that are never
// issued twice, from one Redis round trip, which the concurrent calls of a
// process share.
//
// # How it works
//
// Each (biz, day) has a Redis counter, ns:seq:{biz}:yyyymmdd, and next to it
// (same hash tag) a mark: the highest number the counter may reach. One Lua
// script increments the counter only if the result stays at or below the
// mark. The mark comes from the DB: table asidekit_seq_segments
// (schema.SeqSegment) holds a high-water mark per (biz, day), raised in
// segments inside a transaction (SELECT ... FOR UPDATE, then UPDATE), and a
// segment reaches Redis only after its transaction commits. So every number
// issued is at or below the DB mark.
//
// When about RefillAt of a segment is used, the script hands one caller,
// across all processes, a short lease (SET NX PX); that caller reserves the
// next segment in the background while the others keep counting (double
// buffering), so callers rarely wait on the DB. In-process, callers that do
// reach the mark wait for the local reservation rather than start their own.
//
// If the counter key is lost (a restart without persistence, a flush, a
// failover to a replica that missed writes, an eviction), the script says so
// and one caller re-seeds it: it reserves a fresh segment (lo, hi] above the
// DB mark and sets the counter to lo. Numbers between the last one issued and
// lo are skipped; none is repeated. Each reservation moves the DB mark to
// the observed counter + Segment, so a lost key skips about Segment numbers
// at most. A refill that was reserving when the key went cannot install its
// segment and gives its lease up at once, so the re-seed does not wait for
// it.
//
// # Why a number is never issued twice
//
// Reservations are atomic in the DB, so segments never overlap. Within the
// life of one counter key the counter only grows, and it only ever moves
// through segments installed during that life. A segment is installed at
// most once in all: a segment reserved before a counter was seeded lies
// below that counter's start (the seed's own reservation came later, above
// it), and one installed since lies at or below the mark, so a late or
// replayed install (go-redis retries a command on some network errors) is
// dropped. Seeding needs the caller's lease, which the loss of the keys or
// the seed itself removes, so a replayed seed cannot restart a counter below
// numbers already issued. The lease only limits wasted numbers; safety never
// rests on it.
//
// # Joined calls
//
// Concurrent Next calls of one Generator for the same biz and day share a
// round trip (group commit, as cacheaside joins reads): the first call to
// find none in flight starts a sender; calls that arrive while its script
// call is in flight queue, and when it returns, every call queued then,
// oldest first and up to Options.MaxBatch (default 100), goes into the
// next script call. Nothing waits on a timer: a lone call is sent at once
// (the sender only yields to the scheduler once after handing numbers out,
// so that the callers it woke can queue again). The script takes up to n
// numbers: when the segment, or the day, has fewer left, it takes what is
// left and says how many; the first calls of the batch get them in queue
// order, and the others go first into the next script call, after the
// refill. The lease and the refills work as for a single call. NextN is
// not joined (its numbers are consecutive, all or none); MaxBatch 1 turns
// joining off.
//
// Joining keeps every promise above. A batch hands out exactly the
// numbers the script's reply says it issued (its last number and its
// count), never those it asked for: a call go-redis sends again after a
// lost reply runs the script again and issues new numbers (the first
// run's are skipped; a lease the first run took is still the call's, by
// its token), and a batch that found fewer numbers than it asked for
// hands out those only. The work of a batch (a wait for a segment, a
// reservation, the fallback below) runs under a context of its own, which
// ends only when every caller of the batch has left, or at Close: a caller
// whose context ends returns at once with its error, and a number taken
// for it is skipped (Stats.Abandoned), never handed to another caller. An
// error (ErrExhausted, ErrUnavailable, a DB error) goes to every caller of
// the batch. A lost reply skips up to MaxBatch numbers instead of one.
//
// # When Redis is down
//
// A Redis call that fails, or gets no reply within Options.RedisTimeout
// (200 ms by default, whatever the client's timeouts), does not fail Next:
// the process reserves a segment in the DB itself, with the same atomic
// reservation a seed uses (a fresh (lo, hi] above the DB mark), and issues
// from it in memory, one caller at a time per biz (each caller of a
// joined batch gets a number of its own). After BreakerFailures
// failures in a row Redis is skipped for BreakerCooldown, so a dead Redis
// costs no deadline per call; then one call at a time tries it again. A
// call that finds the counter at its mark while another caller holds the
// refill lease waits for that reservation at most 5 × RedisTimeout (at
// most LeaseTTL) without the counter moving, then issues the same way: a
// lease whose holder lost its reply or is stuck costs that, not LeaseTTL.
//
// Such a segment is never installed in Redis, and the Redis counter only
// ever counts inside segments installed in it, so when Redis is back its
// counter cannot reach a number issued in-process: it goes on in its own
// segment, and its next one is reserved above the DB mark, past every
// in-process segment. (A segment whose install failed is not used
// in-process either: the install may have run.) No re-seed is needed, and
// the promise holds across processes: numbers can skip, none is issued
// twice.
//
// What it costs: one DB round trip per Segment numbers per process while
// Redis is down; numbers that are unique but no longer increasing, since
// each process issues from its own segment and Redis, once back, resumes
// below them; and gaps, as each process reserves a segment of its own (up
// to Segment numbers per process per outage are left over, kept for the
// next outage of the same day). Size Width with that in mind. When the DB
// is down too, or Redis's segment is used up and the DB is down, Next
// returns ErrUnavailable.
//
// # Days, formats, overflow
//
// Each call reads the clock once and derives the day from that instant in
// Options.Location, for both the key and the printed date; a new day starts
// at 1 (or after SeedFrom's answer, for tables older than the generator).
// With Width 5 the 100,000th number of a day is ErrExhausted, or six digits
// with OverflowWiden; never a wrap.
//
// # Operating it
//
// The keys must not be evicted for the numbers to stay dense: give them a
// volatile-* policy (they carry a TTL of at least 48 h) or a Redis of their
// own. An eviction or failover costs a skipped range, never a duplicate.
// Run schema.Migrate (or migrate schema.SeqSegment) before New.
//
// Size Segment for the peak rate: the background refill has
// (1 - RefillAt) × Segment numbers of headroom to reach the DB and back, so
// with 20,000 numbers a second and a 5 ms reservation, Segment 1000 leaves
// 200 numbers = 10 ms. Callers that find the counter dry wait for the
// reservation in flight (in-process) or poll with a short backoff (another
// process holds the lease).
//
// The DB keeps one small row per biz and day. Rows of days older than
// KeyTTL plus the clock skew between processes may be deleted; the current
// day's row must never be, or a lost key would restart the day at 0.
package seqgen
