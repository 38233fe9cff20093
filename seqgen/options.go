package seqgen

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/keys"
)

// Overflow says what Next does once a day has used every number that fits
// in Options.Width digits.
type Overflow int

const (
	// OverflowError returns ErrExhausted. The default.
	OverflowError Overflow = iota
	// OverflowWiden keeps counting and prints the counter with as many
	// digits as it needs (ORD2026112999999, then ORD20261129100000).
	OverflowWiden
)

// SeedFunc returns the highest number already used for biz on day, for
// tables older than the generator. It runs inside the reservation's
// transaction (tx), only for a (biz, day) that has no mark in the DB yet.
type SeedFunc func(ctx context.Context, tx *gorm.DB, biz string, day Day) (int64, error)

// Options configures a Generator. The zero value, and a nil *Options, are
// usable: every field documents its default.
type Options struct {
	// Namespace starts every Redis key. Default "ak".
	Namespace string

	// Width is the number of digits the counter is padded to with zeros.
	// Default 5: ORD2026112900001.
	Width int

	// Overflow decides what happens past 10^Width - 1 numbers in one day.
	// Default OverflowError (Next returns ErrExhausted).
	Overflow Overflow

	// DateLayout prints the day between prefix and counter, as in
	// time.Time.Format. Default "20060102". It must tell days apart (year,
	// month and day), or two days would print the same serials: New rejects
	// a layout that prints two of 800 consecutive days alike.
	DateLayout string

	// Location is the time zone in which days begin and end. Default
	// time.Local. The Redis key and the DB row are named after the day's
	// yyyymmdd, so processes in different zones share a counter for a given
	// date string and never issue a serial twice; they only disagree on
	// when the day turns over. Set it explicitly in production.
	Location *time.Location

	// Prefix returns the text printed before the date. Default: biz itself.
	// Different biz codes must get prefixes that cannot be confused.
	Prefix func(biz string) string

	// Segment is how far ahead of the counter one reservation moves the DB
	// mark: each reservation raises it to (counter + Segment), or by the
	// batch size when more is needed. A lost Redis key skips at most about
	// Segment numbers. Default 1000, at most MaxSegment; NextN accepts at
	// most Segment numbers.
	Segment int64

	// MaxBatch bounds how many concurrent Next calls of one biz and day
	// one Redis round trip serves. Calls that arrive while a round trip is
	// in flight queue; when it returns, up to MaxBatch of them (oldest
	// first) go into the next one, the rest into the one after. Nothing
	// waits on a timer: a lone call goes at once. Default 100; 1 sends
	// every Next on its own round trip, from the caller's goroutine.
	MaxBatch int

	// RefillAt is the fraction of Segment used after which one process
	// reserves the next segment in the background. Default 0.8; 1 reserves
	// only when a caller finds the counter at its mark.
	RefillAt float64

	// KeyTTL is how long a day's Redis keys live after their last
	// reservation. Default 48h, which is also the minimum.
	KeyTTL time.Duration

	// LeaseTTL bounds how long one process may hold the right to reserve a
	// segment for a (biz, day) before another may take over, and a caller's
	// wait for that reservation (see RedisTimeout). Default 5s.
	LeaseTTL time.Duration

	// RedisTimeout bounds each Redis call of the generator, whatever the
	// client's own timeouts (the caller's earlier deadline wins). Past it
	// the call counts as a Redis failure and the number comes from the DB
	// (see the package doc, "When Redis is down"). A caller at the mark
	// waits at most 5 × RedisTimeout (at most LeaseTTL) for another
	// caller's reservation while the counter does not move, then issues
	// from the DB the same way. Default 200ms.
	RedisTimeout time.Duration

	// BreakerFailures is how many Redis calls in a row must fail before the
	// generator stops trying Redis for BreakerCooldown and issues from the
	// DB straight away. Default 3; negative: no breaker (every call tries
	// Redis, as under a Kit, whose node guard fails a call to a node known
	// down at once).
	BreakerFailures int

	// BreakerCooldown is how long Redis is skipped after BreakerFailures
	// failures in a row; then one call at a time tries it, and the first
	// that succeeds brings every call back to Redis. Default 1s.
	BreakerCooldown time.Duration

	// Clock returns the current time; it is read once per call. Default
	// time.Now.
	Clock func() time.Time

	// OnBackgroundError, if set, receives the errors of background refills
	// (a DB or Redis failure while reserving ahead). Default nil: they are
	// dropped, and the first caller to reach the mark reserves itself and
	// gets the error. It must not block.
	OnBackgroundError func(biz string, err error)

	// SeedFrom, if set, gives the starting point of a (biz, day) that has no
	// mark in the DB yet, e.g. MaxSerial. Default nil: a new day starts at 1.
	SeedFrom SeedFunc
}

// Defaults of Options.
const (
	DefaultWidth      = 5
	DefaultDateLayout = "20060102"
	DefaultSegment    = 1000
	DefaultMaxBatch   = 100
	DefaultRefillAt   = 0.8
	DefaultKeyTTL     = 48 * time.Hour
	DefaultLeaseTTL   = 5 * time.Second

	DefaultRedisTimeout    = 200 * time.Millisecond
	DefaultBreakerFailures = 3
	DefaultBreakerCooldown = time.Second
)

// MaxSegment is the largest Options.Segment: NextN builds up to Segment
// serials in memory, and a lost key skips about Segment numbers.
const MaxSegment = 1 << 20

// maxValue is the highest counter seqgen issues even when widening: Lua
// numbers are doubles, exact up to 2^53.
const maxValue = 1<<53 - 1

// MaxBiz is the longest biz code, in bytes (the DB column's size).
const MaxBiz = 64

// init returns a copy of o (nil allowed) with defaults filled in, or an
// error wrapping ErrInvalid.
func (o *Options) init() (Options, error) {
	c, err := keys.CopyOptions(o, func(c *Options) *string { return &c.Namespace }, ErrInvalid)
	if err != nil {
		return c, err
	}
	if c.Width == 0 {
		c.Width = DefaultWidth
	}
	if c.Width < 1 || c.Width > 15 {
		return c, fmt.Errorf("%w: Width %d out of range [1, 15]", ErrInvalid, c.Width)
	}
	if c.Overflow != OverflowError && c.Overflow != OverflowWiden {
		return c, fmt.Errorf("%w: unknown Overflow %d", ErrInvalid, c.Overflow)
	}
	if c.DateLayout == "" {
		c.DateLayout = DefaultDateLayout
	}
	if c.Location == nil {
		c.Location = time.Local
	}
	if err := checkLayout(c.DateLayout, c.Location); err != nil {
		return c, err
	}
	if c.Segment == 0 {
		c.Segment = DefaultSegment
	}
	if c.Segment < 1 || c.Segment > MaxSegment {
		return c, fmt.Errorf("%w: Segment %d out of range [1, %d]", ErrInvalid, c.Segment, MaxSegment)
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxBatch < 1 || c.MaxBatch > MaxSegment {
		return c, fmt.Errorf("%w: MaxBatch %d out of range [1, %d]", ErrInvalid, c.MaxBatch, MaxSegment)
	}
	if c.RefillAt == 0 {
		c.RefillAt = DefaultRefillAt
	}
	if !(c.RefillAt > 0 && c.RefillAt <= 1) {
		return c, fmt.Errorf("%w: RefillAt %v out of range (0, 1]", ErrInvalid, c.RefillAt)
	}
	if c.KeyTTL == 0 {
		c.KeyTTL = DefaultKeyTTL
	}
	if c.KeyTTL < DefaultKeyTTL {
		return c, fmt.Errorf("%w: KeyTTL %v is below the minimum %v", ErrInvalid, c.KeyTTL, DefaultKeyTTL)
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.LeaseTTL < time.Millisecond {
		return c, fmt.Errorf("%w: LeaseTTL %v < 1ms", ErrInvalid, c.LeaseTTL)
	}
	if c.RedisTimeout == 0 {
		c.RedisTimeout = DefaultRedisTimeout
	}
	if c.RedisTimeout < 0 {
		return c, fmt.Errorf("%w: RedisTimeout %v < 0", ErrInvalid, c.RedisTimeout)
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = DefaultBreakerFailures
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	if c.BreakerCooldown < 0 {
		return c, fmt.Errorf("%w: BreakerCooldown %v < 0", ErrInvalid, c.BreakerCooldown)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c, nil
}

// checkLayout rejects a date layout that prints two days alike.
func checkLayout(layout string, loc *time.Location) error {
	seen := make(map[string]bool, 800)
	d := time.Date(2025, 1, 1, 12, 0, 0, 0, loc)
	for i := 0; i < 800; i++ {
		s := d.AddDate(0, 0, i).Format(layout)
		if seen[s] {
			return fmt.Errorf("%w: DateLayout %q prints two days as %q", ErrInvalid, layout, s)
		}
		seen[s] = true
	}
	return nil
}

// limit returns the highest number a day may reach under these options.
func (o *Options) limit() int64 {
	if o.Overflow == OverflowWiden {
		return maxValue
	}
	m := int64(1)
	for i := 0; i < o.Width; i++ {
		m *= 10
	}
	return m - 1
}
