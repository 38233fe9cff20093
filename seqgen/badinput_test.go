package seqgen_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestNew_badInput_segment(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	db := &gorm.DB{}
	for _, seg := range []int64{seqgen.MaxSegment + 1, math.MaxInt64, math.MinInt64} {
		if _, err := seqgen.New(r.Client, db, &seqgen.Options{Segment: seg}); !errors.Is(err, seqgen.ErrInvalid) {
			t.Errorf("Segment %d: %v, want ErrInvalid", seg, err)
		}
	}
	if _, err := seqgen.New(r.Client, db, &seqgen.Options{Segment: seqgen.MaxSegment}); err != nil {
		t.Errorf("Segment MaxSegment: %v", err)
	}
}

// Every refused call leaves Redis and the DB as they were.
func TestGenerator_badInput_table(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	g := e.gen(t, func(o *seqgen.Options) { o.Segment = 100 })
	closed := e.gen(t, nil)
	_ = closed.Close()
	at := func(tm time.Time) *seqgen.Generator {
		return e.gen(t, func(o *seqgen.Options) { o.Clock = fixedClock(tm) })
	}
	next := func(g *seqgen.Generator, ctx context.Context, biz string) func() error {
		return func() error { _, err := g.Next(ctx, biz); return err }
	}
	nextN := func(g *seqgen.Generator, ctx context.Context, biz string, n int) func() error {
		return func() error { _, err := g.NextN(ctx, biz, n); return err }
	}
	for _, tc := range []struct {
		what string
		call func() error
		want error
	}{
		{"empty biz", next(g, ctx, ""), seqgen.ErrInvalid},
		{"biz one byte too long", next(g, ctx, strings.Repeat("B", seqgen.MaxBiz+1)), seqgen.ErrInvalid},
		{"1 MB biz", next(g, ctx, strings.Repeat("B", 1<<20)), seqgen.ErrInvalid},
		{"NextN(0)", nextN(g, ctx, "ORD", 0), seqgen.ErrInvalid},
		{"NextN(-1)", nextN(g, ctx, "ORD", -1), seqgen.ErrInvalid},
		{"NextN(Segment + 1)", nextN(g, ctx, "ORD", 101), seqgen.ErrInvalid},
		{"NextN(MaxInt)", nextN(g, ctx, "ORD", math.MaxInt), seqgen.ErrInvalid},
		{"NextN(MinInt)", nextN(g, ctx, "ORD", math.MinInt), seqgen.ErrInvalid},
		{"Next, cancelled", next(g, cancelled, "ORD"), context.Canceled},
		{"NextN, cancelled", nextN(g, cancelled, "ORD", 5), context.Canceled},
		{"Next, closed", next(closed, ctx, "ORD"), seqgen.ErrClosed},
		{"NextN, closed", nextN(closed, ctx, "ORD", 5), seqgen.ErrClosed},
		{"Clock in year 10000", next(at(time.Date(10000, 1, 1, 12, 0, 0, 0, shanghai)), ctx, "ORD"), seqgen.ErrInvalid},
		{"Clock in year -5", next(at(time.Date(-5, 1, 1, 12, 0, 0, 0, shanghai)), ctx, "ORD"), seqgen.ErrInvalid},
	} {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, err, tc.want)
		}
	}
	if ks, err := e.r.Client.Keys(ctx, e.r.Namespace+":*").Result(); err != nil || len(ks) != 0 {
		t.Errorf("refused calls left keys %v (%v)", ks, err)
	}
	var rows int64
	if err := e.pg.DB.Model(&schema.SeqSegment{}).Count(&rows).Error; err != nil || rows != 0 {
		t.Errorf("refused calls left %d mark rows (%v)", rows, err)
	}
	// The generator is unharmed.
	if got := mustNext(t, g, "ORD"); got != "ORD2026112900001" {
		t.Errorf("first Next after the refused calls = %q", got)
	}
}

// A caller that waits for another process's reservation honours its
// context, and neither issues a number nor takes the lease.
func TestGenerator_Next_waitHonoursContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, nil)
	lease := e.r.Namespace + ":seq:{ORD}:20261129:lease"
	if err := e.r.Client.Set(context.Background(), lease, "another-process", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if s, err := g.Next(ctx, "ORD"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next while another process holds the lease = %q, %v; want the context's deadline", s, err)
	}
	if v := e.r.Client.Get(context.Background(), lease).Val(); v != "another-process" {
		t.Errorf("lease = %q, taken from its holder", v)
	}
	if m := dbMark(t, e.pg.DB, "ORD", "20261129"); m != 0 {
		t.Errorf("DB mark = %d, want none", m)
	}
}

// Redis stops mid-day and comes back empty: calls go on from the DB while
// it is down, and every number, before, during and after, is new.
func TestGenerator_Next_redisRestartNeverRepeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := testcontainers.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	g := newGen(t, client, e.pg.DB, e.opts(func(o *seqgen.Options) {
		o.Segment = 10
		// A stopped server refuses at once; a generous bound keeps a busy
		// machine's slow reply from counting as a fallback while it runs.
		o.RedisTimeout = 5 * time.Second
	}))
	issued := map[string]bool{}
	record := func(s string) {
		t.Helper()
		if issued[s] {
			t.Fatalf("%q issued twice", s)
		}
		issued[s] = true
	}
	draw := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			record(mustNext(t, g, "ORD"))
		}
	}
	draw(15)
	srv.Stop()
	draw(15)
	batch, err := g.NextN(context.Background(), "ORD", 3)
	if err != nil {
		t.Fatalf("NextN with Redis down: %v", err)
	}
	for _, s := range batch {
		record(s)
	}
	if st := g.Stats(); st.Fallbacks != 16 {
		t.Fatalf("Stats with Redis down = %+v, want 16 calls served from the DB", st)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitForRedis(t, g, record)
	draw(15)
}

// The DB goes away mid-day: the reserved segment is still served, calls
// past it fail with the DB's error, and a generator on a live DB then goes
// on above every number issued.
func TestGenerator_Next_dbDownMidDay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db2, err := gorm.Open(postgres.Open(e.pg.DSN), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db2.DB()
	if err != nil {
		t.Fatal(err)
	}
	opts := func(o *seqgen.Options) { o.Segment = 10; o.RefillAt = 1 }
	g := newGen(t, e.r.Client, db2, e.opts(opts))
	var last int64
	for i := 1; i <= 5; i++ {
		last = counterOf(t, mustNext(t, g, "ORD"), "ORD20261129")
	}
	_ = sqlDB.Close()
	for i := 6; i <= 10; i++ { // the rest of the segment needs no DB
		last = counterOf(t, mustNext(t, g, "ORD"), "ORD20261129")
	}
	if s, err := g.Next(context.Background(), "ORD"); !errors.Is(err, seqgen.ErrUnavailable) {
		t.Fatalf("Next past the mark with the DB closed = %q, %v; want ErrUnavailable", s, err)
	}
	if m := dbMark(t, e.pg.DB, "ORD", "20261129"); m != 10 {
		t.Fatalf("DB mark = %d, want 10: a failed reservation moved it", m)
	}
	live := e.gen(t, opts)
	if v := counterOf(t, mustNext(t, live, "ORD"), "ORD20261129"); v <= last {
		t.Fatalf("after the DB came back: %d, not above %d", v, last)
	}
}
