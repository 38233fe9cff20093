package benchmarks

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/backoff"
)

// dbCounter counts SQL statements through GORM callbacks registered on
// every processor (create, query, update, delete, row, raw).
type dbCounter struct {
	statements  atomic.Int64
	inflight    atomic.Int64
	maxInflight atomic.Int64
	// delay, when > 0, is slept before every query: a stand-in for a
	// heavier read than a primary-key lookup (nanoseconds).
	delay atomic.Int64
	rec   atomic.Pointer[recorder]
}

// span is one statement's start and end.
type span struct{ start, end time.Time }

// recorder keeps the span of each statement that ends while a run records.
type recorder struct {
	mu    sync.Mutex // guards spans
	spans []span
}

func (r *recorder) add(s span) {
	r.mu.Lock()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...)
}

func starts(spans []span) []time.Time {
	out := make([]time.Time, len(spans))
	for i, s := range spans {
		out[i] = s.start
	}
	return out
}

const (
	cbBefore = "asidebench:before"
	cbAfter  = "asidebench:after"
)

// register installs the counting callbacks on db.
func (c *dbCounter) register(db *gorm.DB) error {
	cb := db.Callback()
	type hook interface {
		Register(string, func(*gorm.DB)) error
	}
	pairs := []struct {
		before, after hook
		slow          bool
	}{
		{cb.Create().Before("gorm:create"), cb.Create().After("gorm:create"), false},
		{cb.Query().Before("gorm:query"), cb.Query().After("gorm:query"), true},
		{cb.Update().Before("gorm:update"), cb.Update().After("gorm:update"), false},
		{cb.Delete().Before("gorm:delete"), cb.Delete().After("gorm:delete"), false},
		{cb.Row().Before("gorm:row"), cb.Row().After("gorm:row"), false},
		{cb.Raw().Before("gorm:raw"), cb.Raw().After("gorm:raw"), false},
	}
	for _, p := range pairs {
		before := c.before
		if p.slow {
			before = c.beforeQuery
		}
		if err := p.before.Register(cbBefore, before); err != nil {
			return err
		}
		if err := p.after.Register(cbAfter, c.after); err != nil {
			return err
		}
	}
	return nil
}

func (c *dbCounter) before(db *gorm.DB) {
	if db.Error != nil || db.DryRun {
		return
	}
	c.statements.Add(1)
	n := c.inflight.Add(1)
	for {
		m := c.maxInflight.Load()
		if n <= m || c.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	db.InstanceSet(cbBefore, time.Now())
}

// beforeQuery counts a query and, when a delay is set, sleeps it: the
// delay stands for a heavier read than a primary-key lookup.
func (c *dbCounter) beforeQuery(db *gorm.DB) {
	c.before(db)
	if d := time.Duration(c.delay.Load()); d > 0 && db.Error == nil {
		ctx := db.Statement.Context
		if ctx == nil {
			ctx = context.Background()
		}
		_ = backoff.Sleep(ctx, d)
	}
}

func (c *dbCounter) after(db *gorm.DB) {
	v, ok := db.InstanceGet(cbBefore)
	if !ok {
		return
	}
	c.inflight.Add(-1)
	if r := c.rec.Load(); r != nil {
		start, _ := v.(time.Time)
		r.add(span{start, time.Now()})
	}
}

// redisCounter is a go-redis hook counting round trips: one per command
// sent on its own, one per pipeline.
type redisCounter struct {
	roundTrips atomic.Int64
}

func (c *redisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.roundTrips.Add(1)
		return next(ctx, cmd)
	}
}

func (c *redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.roundTrips.Add(1)
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*redisCounter)(nil)

// dialer is the net.Dialer every client uses: short timeouts so that a dead
// server is reported at once instead of after a stack of retries.
var dialer = &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
