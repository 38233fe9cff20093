package seqgen

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/schema"
)

var (
	//go:embed peek.lua
	peekLua    string
	peekScript = script.New(peekLua)
)

// Peeked is what Redis and the database held for one biz and day, as Peek
// saw them.
type Peeked struct {
	// Biz is the business code and Day the day peeked at.
	Biz string
	Day Day
	// Key is the Redis counter's key, e.g. "ak:seq:{ORD}:20261129".
	Key string
	// Exists reports whether the counter key exists. A missing key was
	// never used that day, or was lost (a restart, a flush, an eviction):
	// the next Next re-seeds it above DBMark, skipping numbers.
	Exists bool
	// Last is the last number issued from Redis (the counter), 0 when
	// the key is missing.
	Last int64
	// Mark is the highest number the counter may reach before a new
	// segment is installed, 0 when unknown.
	Mark int64
	// Lease is the token of the caller reserving the next segment ("" when
	// none is), and LeaseTTL its remaining time.
	Lease    string
	LeaseTTL time.Duration
	// DBMark is the high-water mark reserved in the database
	// (schema.SeqSegment), 0 when the day has no row: no number of the day
	// above it was ever issued, from Redis or, during an outage, in a
	// process.
	DBMark int64
	// Next is how the number after Last prints (what Next would return
	// from Redis, if it issued the next number).
	Next string
}

// Peek returns what Redis and the database hold for biz on the day of
// instant at (in Options.Location), with no side effect: no number is
// issued, no lease taken, no segment reserved or installed. It costs one
// Redis round trip and one SELECT. Redis's and the database's errors are
// returned as they are (the breaker and the in-process fallback are not
// used); a biz code Next would refuse is ErrInvalid.
func (g *Generator) Peek(ctx context.Context, biz string, at time.Time) (Peeked, error) {
	escBiz, err := checkBiz(biz)
	if err != nil {
		return Peeked{}, err
	}
	prefix := biz
	if g.opts.Prefix != nil {
		prefix = g.opts.Prefix(biz)
	}
	if y := at.In(g.opts.Location).Year(); y < 1 || y > 9999 {
		return Peeked{}, fmt.Errorf("%w: %v is outside the years 1 to 9999", ErrInvalid, at)
	}
	day := g.dayOf(at, prefix)
	k := g.keysFor(escBiz, day.Key)
	p := Peeked{Biz: biz, Day: day, Key: k.counter}
	res, err := peekScript.Run(ctx, g.rdb, k.list()).Slice()
	if err != nil {
		return Peeked{}, fmt.Errorf("seqgen: peek %s: %w", k.counter, err)
	}
	if len(res) != 4 {
		return Peeked{}, fmt.Errorf("seqgen: peek.lua returned %d values, want 4", len(res))
	}
	if s, ok := res[0].(string); ok {
		p.Exists = true
		p.Last, _ = strconv.ParseInt(s, 10, 64)
	}
	if s, ok := res[1].(string); ok {
		p.Mark, _ = strconv.ParseInt(s, 10, 64)
	}
	if s, ok := res[2].(string); ok {
		p.Lease = s
		if ms, ok := res[3].(int64); ok && ms > 0 {
			p.LeaseTTL = time.Duration(ms) * time.Millisecond
		}
	}
	var rows []schema.SeqSegment
	if err := g.db.WithContext(ctx).Where("biz = ? AND day = ?", biz, day.Key).Limit(1).Find(&rows).Error; err != nil {
		return Peeked{}, fmt.Errorf("seqgen: peek %s %s: read mark: %w", biz, day.Key, err)
	}
	if len(rows) > 0 {
		p.DBMark = rows[0].HighWater
	}
	p.Next = format(day.Prefix, p.Last+1, g.opts.Width)
	return p, nil
}

// String returns the counter's state in one line.
func (p Peeked) String() string {
	s := p.Key + ": "
	if p.Exists {
		s += "last " + strconv.FormatInt(p.Last, 10) + ", next " + p.Next
	} else {
		s += "no counter"
	}
	return s + fmt.Sprintf(", redis mark %d, db mark %d", p.Mark, p.DBMark)
}
