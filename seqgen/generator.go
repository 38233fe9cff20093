package seqgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/internal/breaker"
	"github.com/asidekit/asidekit/internal/keys"
)

var (
	// ErrExhausted is returned when a day has no number left within
	// Options.Width digits (with OverflowError).
	ErrExhausted = errors.New("seqgen: sequence exhausted for the day")
	// ErrInvalid wraps every rejected argument or option: an empty or too
	// long biz code, a batch size out of range, a bad Options field, a
	// Clock reading outside the years 1 to 9999.
	ErrInvalid = errors.New("seqgen: invalid argument")
	// ErrClosed is returned by calls on a closed Generator.
	ErrClosed = errors.New("seqgen: generator closed")
	// ErrPanic wraps the value of a panic in a user callback (Clock,
	// Prefix, SeedFrom).
	ErrPanic = errors.New("seqgen: callback panicked")
	// ErrUnavailable wraps the causes when no number can be issued because
	// a backend failed: Redis is down and so is the DB (or the DB is down
	// and Redis has no numbers left in its segment). The request may
	// succeed later: map it to 503. A Redis outage alone is not an error
	// (see the package doc, "When Redis is down").
	ErrUnavailable = errors.New("seqgen: unavailable")
)

// errHolderStuck is why a call that waited maxWait for another caller's
// reservation issues from the DB.
var errHolderStuck = errors.New("seqgen: the holder of the refill lease has not reserved")

// maxWait bounds how long a call waits for another caller's reservation:
// 5 × RedisTimeout, at most LeaseTTL. A lease granted by a reply that was
// lost (the link cut after Redis ran the script) or taken by a caller that
// is stuck would otherwise hold every caller at the mark for LeaseTTL; past
// the bound the number comes from the DB, as when Redis is down.
func (g *Generator) maxWait() time.Duration {
	return min(5*g.opts.RedisTimeout, g.opts.LeaseTTL)
}

// maxWasted bounds the reservations of one call whose segment was dropped
// instead of installed: more means its segments keep being lost (LeaseTTL
// shorter than a reservation, or the keys deleted over and over), and the
// call gives up rather than burn the day's numbers.
const maxWasted = 8

// Generator issues daily business sequence numbers such as
// ORD2026112900001: a Redis counter on the hot path, bounded by a
// high-water mark reserved in the DB. It is safe for concurrent use; any
// number of Generators, in any number of processes, may share one Redis
// and one DB.
type Generator struct {
	rdb   redis.Scripter
	db    *gorm.DB
	opts  Options
	limit int64  // highest number of a day
	low   int64  // refill once mark - last <= low
	id    string // random, unique per Generator: the stem of lease tokens
	seq   atomic.Uint64

	ctx    context.Context // cancelled by Close; the parent of background refills
	cancel context.CancelFunc
	wg     sync.WaitGroup // background refills

	closed atomic.Bool // set once by Close, under mu

	mu      sync.Mutex
	flights map[string]*flight // guarded by mu: reservations running in this process, by counter key
	spares  map[string]*spare  // guarded by mu: segments to issue from while Redis is down, by biz

	batchers sync.Map // counter key → *batcher: joined Next calls, while any are queued

	brk        breaker.Breaker // over Redis calls (redisCall)
	noFallback bool            // tests only: fail instead of issuing from the DB when Redis is down
	trustAsked bool            // tests only: hand out the numbers asked for, not those next.lua issued (duplicates)

	ctr counters
}

// New returns a Generator that counts in client and reserves in db, whose
// schema must include schema.SeqSegment (schema.Migrate creates it).
// opts may be nil.
func New(client redis.UniversalClient, db *gorm.DB, opts *Options) (*Generator, error) {
	if client == nil || db == nil {
		return nil, fmt.Errorf("%w: nil Redis client or DB", ErrInvalid)
	}
	o, err := opts.init()
	if err != nil {
		return nil, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("seqgen: token: %w", err)
	}
	g := &Generator{
		rdb:     client,
		db:      db,
		opts:    o,
		limit:   o.limit(),
		low:     o.Segment - int64(float64(o.Segment)*o.RefillAt),
		id:      hex.EncodeToString(b[:]),
		flights: make(map[string]*flight),
		spares:  make(map[string]*spare),
		brk:     breaker.Breaker{Threshold: int64(o.BreakerFailures), Cooldown: o.BreakerCooldown},
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g, nil
}

// Next returns the next number of biz for today, e.g. "ORD2026112900001".
// Concurrent calls for the same biz and day join: one Redis round trip
// serves every call that arrived while the previous one was in flight, up
// to Options.MaxBatch (see the package doc, "Joined calls").
func (g *Generator) Next(ctx context.Context, biz string) (string, error) {
	day, k, err := g.begin(ctx, biz, 1)
	if err != nil {
		return "", err
	}
	var v int64
	if g.opts.MaxBatch == 1 {
		v, err = g.takeAt(ctx, biz, day, k, 1)
	} else {
		v, err = g.nextJoined(ctx, biz, day, k)
	}
	if err != nil {
		return "", err
	}
	return format(day.Prefix, v, g.opts.Width), nil
}

// NextN returns n consecutive numbers of biz for today, from one Redis
// round trip (unless a segment must be reserved first). n is at most
// Options.Segment. A batch is all or nothing: if fewer than n numbers are
// left in the day, NextN returns ErrExhausted.
func (g *Generator) NextN(ctx context.Context, biz string, n int) ([]string, error) {
	first, day, err := g.take(ctx, biz, int64(n))
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		out[i] = format(day.Prefix, first+int64(i), g.opts.Width)
	}
	return out, nil
}

// Close stops background refills and waits for them to end. It does not
// close the Redis client or the DB. Calls after Close return ErrClosed, and
// so do joined Next calls still waiting for their number.
func (g *Generator) Close() error {
	g.mu.Lock()
	g.closed.Store(true)
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
	return nil
}

// take issues n numbers of biz and returns the first and the day.
func (g *Generator) take(ctx context.Context, biz string, n int64) (int64, Day, error) {
	day, k, err := g.begin(ctx, biz, n)
	if err != nil {
		return 0, Day{}, err
	}
	first, err := g.takeAt(ctx, biz, day, k, n)
	if err != nil {
		return 0, Day{}, err
	}
	return first, day, nil
}

// begin checks a call for n numbers of biz and returns its day and keys.
func (g *Generator) begin(ctx context.Context, biz string, n int64) (Day, keyset, error) {
	if err := ctx.Err(); err != nil {
		return Day{}, keyset{}, err
	}
	if g.closed.Load() {
		return Day{}, keyset{}, ErrClosed
	}
	escBiz, err := checkBiz(biz)
	if err != nil {
		return Day{}, keyset{}, err
	}
	if n < 1 || n > g.opts.Segment {
		return Day{}, keyset{}, fmt.Errorf("%w: batch of %d, want 1 to %d", ErrInvalid, n, g.opts.Segment)
	}
	day, err := g.today(biz)
	if err != nil {
		return Day{}, keyset{}, err
	}
	return day, g.keysFor(escBiz, day.Key), nil
}

// takeAt issues n numbers of biz on day, all or none, from Redis or, when
// Redis is down, from this process's spare segment; it returns the first.
func (g *Generator) takeAt(ctx context.Context, biz string, day Day, k keyset, n int64) (int64, error) {
	first, _, err := g.takeRedis(ctx, biz, day, k, n, false)
	var down redisDown
	if err != nil && errors.As(err, &down) {
		return g.takeDown(ctx, biz, day, n, err)
	}
	return first, err
}

// takeDown issues n numbers from this process's spare segment after Redis
// failed with down (ErrUnavailable under DisableFallback).
func (g *Generator) takeDown(ctx context.Context, biz string, day Day, n int64, down error) (int64, error) {
	if g.noFallback {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, down)
	}
	return g.takeLocal(ctx, biz, day, n, down)
}

// takeRedis issues numbers of biz on day from the Redis counter and
// returns the first and how many: n, or with upto (a batch of joined
// calls) between 1 and n, when the segment or the day has fewer left. Its
// error is a redisDown when Redis failed.
func (g *Generator) takeRedis(ctx context.Context, biz string, day Day, k keyset, n int64, upto bool) (first, count int64, err error) {
	retry := backoff.New(time.Millisecond, maxBackoff)
	// A wait for another caller's reservation ends at waitUntil, set when
	// the call starts waiting on a counter value (seen): a new value is
	// progress (a segment went in), and the bound starts again.
	var waitUntil time.Time
	var seen int64
	for wasted := 0; ; {
		r, err := g.next(ctx, k, n, upto)
		if err != nil {
			return 0, 0, err
		}
		switch r.status {
		case statusIssued:
			if r.leased {
				g.refillAsync(biz, day, k, r.token, r.value)
			}
			// The numbers are the reply's, whatever was asked: a replayed
			// call (a client retry) issued new ones.
			count := r.count
			if g.trustAsked {
				count = n
			}
			return r.value - count + 1, count, nil
		case statusExhausted:
			return 0, 0, ErrExhausted
		case statusNeedSegment, statusNeedSeed:
			if !r.leased {
				if waitUntil.IsZero() || r.value != seen {
					waitUntil, seen = time.Now().Add(g.maxWait()), r.value
				} else if !time.Now().Before(waitUntil) {
					// The holder does not reserve (its lease outlived it, or
					// it is stuck): issue from the DB, as with Redis down.
					return 0, 0, redisDown{errHolderStuck}
				}
				g.ctr.waits.Add(1)
				if err := g.wait(ctx, k.counter, &retry, time.Until(waitUntil)); err != nil {
					return 0, 0, err
				}
				continue
			}
			if wasted == maxWasted {
				g.release(ctx, k, r.token)
				return 0, 0, fmt.Errorf("seqgen: %q %s: %d reserved segments dropped in a row (LeaseTTL too short, or keys deleted repeatedly)", biz, day.Key, wasted)
			}
			g.ctr.sync.Add(1)
			// A batch asks for at most a segment: its calls can share
			// segments, and a lost key still skips about Segment numbers.
			installed, err := g.refill(ctx, biz, day, k, r.token, r.value, min(n, g.opts.Segment), r.status == statusNeedSeed)
			if err != nil {
				return 0, 0, err
			}
			if !installed {
				wasted++
			}
		default:
			return 0, 0, fmt.Errorf("seqgen: next.lua returned status %d", r.status)
		}
	}
}

// next runs next.lua with a fresh lease token, for n numbers (up to n with
// upto). If the call passes its
// deadline and its reply later grants the lease, the lease is released at
// once, even while the breaker skips Redis: the reply shows that Redis
// answers, and a lease left to its TTL would make every process wait
// LeaseTTL for a holder that never reserves.
func (g *Generator) next(ctx context.Context, k keyset, n int64, upto bool) (nextReply, error) {
	token := g.token()
	uptoArg := "0"
	if upto {
		uptoArg = "1"
	}
	v, err := redisCall(ctx, g, func(ctx context.Context) ([]int64, error) {
		return nextScript.Run(ctx, g.rdb, k.list(), n, g.limit, g.low, token, g.opts.LeaseTTL.Milliseconds(), uptoArg).Int64Slice()
	}, func(v []int64) {
		if r, err := parseNext(v); err == nil && r.leased {
			ctx, cancel := context.WithTimeout(context.Background(), g.opts.RedisTimeout)
			defer cancel()
			_ = releaseScript.Run(ctx, g.rdb, []string{k.lease}, token).Err()
		}
	})
	if err != nil {
		return nextReply{}, err
	}
	r, err := parseNext(v)
	r.token = token
	return r, err
}

// today reads the clock once and computes the day and prefix of biz,
// turning a panic of Clock or Prefix into an error.
func (g *Generator) today(biz string) (day Day, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: Clock or Prefix: %v", ErrPanic, r)
		}
	}()
	prefix := biz
	if g.opts.Prefix != nil {
		prefix = g.opts.Prefix(biz)
	}
	now := g.opts.Clock()
	if y := now.In(g.opts.Location).Year(); y < 1 || y > 9999 {
		// yyyymmdd names the DB row and the key: it has four year digits.
		return Day{}, fmt.Errorf("%w: Clock returned %v, outside the years 1 to 9999", ErrInvalid, now)
	}
	return g.dayOf(now, prefix), nil
}

// checkBiz validates a biz code and returns it escaped for a key.
func checkBiz(biz string) (string, error) {
	if len(biz) > MaxBiz {
		return "", fmt.Errorf("%w: biz code of %d bytes, the limit is %d", ErrInvalid, len(biz), MaxBiz)
	}
	esc, err := keys.Escape(biz)
	if err != nil {
		return "", fmt.Errorf("%w: biz code: %v", ErrInvalid, err)
	}
	return esc, nil
}

// token returns a lease token no other call, here or in another process,
// will use.
func (g *Generator) token() string {
	b := make([]byte, 0, len(g.id)+21)
	b = append(b, g.id...)
	b = append(b, ':')
	b = strconv.AppendUint(b, g.seq.Add(1), 10)
	return string(b)
}
