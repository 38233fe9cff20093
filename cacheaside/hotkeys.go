package cacheaside

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// HotKeyPolicy turns on the automatic near cache of hot keys for the
// entities of a Cache that have no Policy.Local: a key read often enough
// in this process is kept in an in-process tier (promoted) with the same
// invalidation as a Policy.Local near cache (Redis client tracking or
// broadcasts, Options.LocalInvalidation; the tier is empty and unfilled
// while that feed is not confirmed; writes of this process drop their
// copies before they return), and leaves it (is demoted) when it cools,
// when its local life ends, or when the budget needs its room.
//
// How often is "often enough": the entity's reads (those that pass the
// read gate) are counted in a count-min sketch (4 rows of 32-bit counters)
// that estimates each key's reads, halved each time it counted Sample
// times as many reads as a row has counters (TinyLFU's aging). A read
// that goes to Redis is counted every time (it costs a round trip
// anyway); a read the tier answers is counted one time in Sample, as
// Sample reads, so that a local hit stays cheap. A read from Redis fills
// the tier only when the key's estimate reaches MinReads; at each halving
// the promoted keys whose estimate fell under half of that are demoted.
// The default MinReads, 2, is TinyLFU's doorkeeper: a key read once in a
// while never fills the tier, a key read twice in a window does, and it is
// the budget that decides how many keys stay, the least valuable leaving
// first.
//
// Memory: Budget bounds the estimated bytes of one entity's tier, its
// sketch included (Budget/64 of it). An entry weighs its id, its encoded
// size in Redis (a stand-in for its decoded size) and a fixed overhead;
// past the budget the least valuable entries are evicted (W-TinyLFU).
type HotKeyPolicy struct {
	// Budget is the memory, in bytes, one entity's hot tier may take.
	// Default 16 MiB (DefaultHotKeyBudget); at least 64 KiB.
	Budget int64

	// MinReads is the estimated number of reads of a key in the current
	// window (see above) from which it is promoted. Default 2.
	MinReads int

	// Sample counts one local hit in Sample, as Sample reads (rounded up
	// to a power of two). Default 8; 1 counts every hit.
	Sample int

	// TTL caps the life of a promoted value (it never outlives its Redis
	// entry's logical expiry either); a key still hot then is promoted
	// again by its next read. Default 10 seconds.
	TTL time.Duration
}

// Defaults of HotKeyPolicy fields.
const (
	DefaultHotKeyBudget   = 16 << 20
	DefaultHotKeyMinReads = 2
	DefaultHotKeySample   = 8
	DefaultHotKeyTTL      = 10 * time.Second
	minHotKeyBudget       = 64 << 10
)

func (p HotKeyPolicy) withDefaults() (HotKeyPolicy, error) {
	if p.Budget < 0 || p.MinReads < 0 || p.Sample < 0 || p.TTL < 0 {
		return p, fmt.Errorf("%w: negative HotKeys.Budget, MinReads, Sample or TTL", ErrInvalid)
	}
	if p.Budget == 0 {
		p.Budget = DefaultHotKeyBudget
	}
	if p.Budget < minHotKeyBudget {
		return p, fmt.Errorf("%w: HotKeys.Budget %d below %d", ErrInvalid, p.Budget, minHotKeyBudget)
	}
	if p.MinReads == 0 {
		p.MinReads = DefaultHotKeyMinReads
	}
	if p.Sample == 0 {
		p.Sample = DefaultHotKeySample
	}
	p.Sample = 1 << bits.Len(uint(p.Sample-1)) // a power of two
	if p.TTL == 0 {
		p.TTL = DefaultHotKeyTTL
	}
	return p, nil
}

// sketchDepth is the number of rows of a sketch.
const sketchDepth = 4

// sketch is a count-min sketch of 32-bit counters, halved every reset
// units added (TinyLFU's aging). Adds and halvings race benignly: a lost
// increment or halving only blurs an estimate.
type sketch struct {
	c     []atomic.Uint32 // sketchDepth rows of mask+1 counters
	mask  uint64
	reset uint64        // units added between two halvings
	adds  atomic.Uint64 // units added since the sketch was made
}

// newSketch returns a sketch of about bytes bytes (rows of a power of two
// counters, at least 64) halved every unit × (counters a row) units: with
// additions of unit units, a counter then holds about one addition of
// other keys on average, so the noise under a key's estimate stays near
// one addition whatever the keyspace.
func newSketch(bytes int64, unit int) *sketch {
	w := max(bytes/(sketchDepth*4), 64)
	w = 1 << (bits.Len64(uint64(w)) - 1) // round down to a power of two
	return &sketch{c: make([]atomic.Uint32, sketchDepth*w), mask: uint64(w - 1), reset: uint64(w) * uint64(max(unit, 1))}
}

// bytes is the sketch's size.
func (s *sketch) bytes() int64 { return int64(len(s.c)) * 4 }

// index is h's counter in row i (double hashing).
func (s *sketch) index(h uint64, i int) int {
	h2 := h>>32 | h<<32 | 1
	return i*int(s.mask+1) + int((h+uint64(i)*h2)&s.mask)
}

// add counts n occurrences of h, and reports whether it halved the
// sketch (the caller then demotes what cooled).
func (s *sketch) add(h uint64, n uint32) (halved bool) {
	for i := range sketchDepth {
		c := &s.c[s.index(h, i)]
		if c.Load() < 1<<30 {
			c.Add(n)
		}
	}
	after := s.adds.Add(uint64(n))
	if after/s.reset != (after-uint64(n))/s.reset {
		s.halve()
		return true
	}
	return false
}

// estimate is the count of h: the least of its counters.
func (s *sketch) estimate(h uint64) uint32 {
	m := s.c[s.index(h, 0)].Load()
	for i := 1; i < sketchDepth; i++ {
		m = min(m, s.c[s.index(h, i)].Load())
	}
	return m
}

func (s *sketch) halve() {
	for i := range s.c {
		s.c[i].Store(s.c[i].Load() / 2)
	}
}

// hotness decides which keys of an entity its near cache keeps (the
// automatic near cache, Options.HotKeys): a nil *hotness admits every key
// (a Policy.Local near cache). Its estimates are in reads: a read that
// goes to Redis adds 1 (it costs a round trip anyway), a read the tier
// answers adds Sample one time in Sample (a local hit stays cheap).
type hotness struct {
	sk      *sketch
	sample  uint32 // Sample - 1: a mask
	unit    uint32 // Sample: what a counted hit adds
	promote uint32 // estimated reads from which a key is promoted
	demote  uint32 // estimate under which a promoted key is demoted at a halving
	scan    func() // runs the demotion pass (in the background)
}

func newHotness(p HotKeyPolicy) *hotness {
	promote := uint32(max(1, p.MinReads))
	return &hotness{
		sk:      newSketch(p.Budget/64, p.Sample),
		sample:  uint32(p.Sample - 1),
		unit:    uint32(p.Sample),
		promote: promote,
		demote:  (promote + 1) / 2,
	}
}

// hit counts, one time in Sample (as Sample reads), a read of the key
// whose hash is h that the tier answered.
func (hn *hotness) hit(h uint64) {
	if hn.sample != 0 && rand.Uint32()&hn.sample != 0 {
		return
	}
	hn.count(h, hn.unit)
}

// miss counts a read of the key whose hash is h that goes to Redis.
func (hn *hotness) miss(h uint64) { hn.count(h, 1) }

func (hn *hotness) count(h uint64, n uint32) {
	if hn.sk.add(h, n) && hn.scan != nil {
		hn.scan()
	}
}

// hot reports whether the key whose hash is h is to be promoted.
func (hn *hotness) hot(h uint64) bool { return hn.sk.estimate(h) >= hn.promote }

// cooled reports whether a promoted key is to be demoted.
func (hn *hotness) cooled(h uint64) bool { return hn.sk.estimate(h) < hn.demote }
