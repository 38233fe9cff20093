package seqgen_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestNew_rejectsBadOptions(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	db := &gorm.DB{}
	for name, o := range map[string]*seqgen.Options{
		"namespace":     {Namespace: "a b"},
		"width":         {Width: 16},
		"negativeWidth": {Width: -1},
		"overflow":      {Overflow: 7},
		"layoutNoYear":  {DateLayout: "0102"},
		"layoutMonth":   {DateLayout: "200601"},
		"segment":       {Segment: -5},
		"refillAt":      {RefillAt: 1.5},
		"keyTTL":        {KeyTTL: time.Hour},
		"leaseTTL":      {LeaseTTL: time.Microsecond},
		"redisTimeout":  {RedisTimeout: -time.Second},
		"cooldown":      {BreakerCooldown: -time.Second},
		"maxBatch":      {MaxBatch: -1},
	} {
		if _, err := seqgen.New(r.Client, db, o); !errors.Is(err, seqgen.ErrInvalid) {
			t.Errorf("%s: New = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := seqgen.New(nil, db, nil); !errors.Is(err, seqgen.ErrInvalid) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := seqgen.New(r.Client, nil, nil); !errors.Is(err, seqgen.ErrInvalid) {
		t.Errorf("nil db: %v", err)
	}
	if _, err := seqgen.New(r.Client, db, nil); err != nil {
		t.Errorf("nil options: %v", err)
	}
}

func TestGenerator_Next_badInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, func(o *seqgen.Options) { o.Segment = 100 })
	ctx := context.Background()
	for name, biz := range map[string]string{"empty": "", "long": strings.Repeat("x", seqgen.MaxBiz+1)} {
		if _, err := g.Next(ctx, biz); !errors.Is(err, seqgen.ErrInvalid) {
			t.Errorf("%s biz: %v, want ErrInvalid", name, err)
		}
	}
	for _, n := range []int{0, -1, 101} {
		if _, err := g.NextN(ctx, "ORD", n); !errors.Is(err, seqgen.ErrInvalid) {
			t.Errorf("NextN(%d): %v, want ErrInvalid", n, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.Next(cancelled, "ORD"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
	// A biz code with key syntax in it is escaped, not rejected, and stays
	// apart from its look-alikes.
	for _, biz := range []string{"A{B}", "A:B", "A B", "A%7BB%7D"} {
		if got, want := mustNext(t, g, biz), biz+"2026112900001"; got != want {
			t.Errorf("Next(%q) = %q, want %q", biz, got, want)
		}
	}
}

func TestGenerator_Next_panickingCallbacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for name, edit := range map[string]func(*seqgen.Options){
		"clock":  func(o *seqgen.Options) { o.Clock = func() time.Time { panic("clock") } },
		"prefix": func(o *seqgen.Options) { o.Prefix = func(string) string { panic("prefix") } },
		"seedFrom": func(o *seqgen.Options) {
			o.SeedFrom = func(context.Context, *gorm.DB, string, seqgen.Day) (int64, error) { panic("seed") }
		},
	} {
		g := e.gen(t, edit)
		if _, err := g.Next(ctx, "P"+name); !errors.Is(err, seqgen.ErrPanic) {
			t.Errorf("%s panics: %v, want ErrPanic", name, err)
		}
	}
	// The lease of the failed seed was released: a sane generator goes on.
	if got := mustNext(t, e.gen(t, nil), "PseedFrom"); got != "PseedFrom2026112900001" {
		t.Errorf("after a failed seed: %q", got)
	}
	bad := e.gen(t, func(o *seqgen.Options) {
		o.SeedFrom = func(context.Context, *gorm.DB, string, seqgen.Day) (int64, error) { return -3, nil }
	})
	if _, err := bad.Next(ctx, "NEG"); !errors.Is(err, seqgen.ErrInvalid) {
		t.Errorf("negative seed: %v, want ErrInvalid", err)
	}
}

func TestGenerator_Next_deadBackends(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = dead.Close() })
	g := newGen(t, dead, e.pg.DB, e.opts(nil))
	if s, err := g.Next(ctx, "DEAD"); err != nil || g.Stats().Fallbacks != 1 {
		t.Fatalf("dead Redis: %q, %v, %+v; want a number from the DB", s, err, g.Stats())
	}

	pg := testcontainers.Postgres(t)
	sqlDB, err := pg.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	_ = sqlDB.Close()
	g = newGen(t, e.r.Client, pg.DB, e.opts(nil))
	if _, err := g.Next(ctx, "ORD"); !errors.Is(err, seqgen.ErrUnavailable) || ctx.Err() != nil {
		t.Fatalf("dead DB: %v, want a prompt ErrUnavailable", err)
	}
	// The lease went back: with a live DB the next caller seeds at once.
	if got := mustNext(t, e.gen(t, nil), "ORD"); got != "ORD2026112900001" {
		t.Fatalf("after the DB failure: %q", got)
	}
}

func TestGenerator_Close(t *testing.T) {
	// Not parallel: goleak looks at every goroutine of the binary.
	e := newEnv(t)
	ignore := goleak.IgnoreCurrent()
	g, err := seqgen.New(e.r.Client, e.pg.DB, e.opts(func(o *seqgen.Options) { o.Segment = 10 }))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ { // crosses the refill threshold more than once
		mustNext(t, g, "ORD")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Next(context.Background(), "ORD"); !errors.Is(err, seqgen.ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	// A background reader of a connection the test's own database pool
	// opened meanwhile belongs to the pool, not to the generator; so does
	// pgx's cancel request for a statement whose context ended (Close
	// cancels a refill in flight), which pgx ends once the server answers.
	goleak.VerifyNone(t, testcontainers.GoleakOptions(ignore,
		goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgconn/internal/bgreader.(*BGReader).bgRead"),
		goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgconn.(*PgConn).asyncClose.func1"))...)
}

func TestGenerator_Next_backgroundErrorReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	errs := make(chan error, 4)
	g := e.gen(t, func(o *seqgen.Options) {
		o.Segment = 10
		o.OnBackgroundError = func(biz string, err error) { errs <- err }
	})
	mustNext(t, g, "ORD") // seeds (0, 10]
	sqlDB, err := e.pg.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	_ = sqlDB.Close()
	for i := 2; i <= 8; i++ { // 8 crosses 80 %: the refill runs, and fails
		mustNext(t, g, "ORD")
	}
	select {
	case err := <-errs:
		if err == nil {
			t.Fatal("nil error reported")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the failed background refill was not reported")
	}
	// The segment's last numbers are still served; past the mark the
	// caller gets the DB error itself.
	mustNext(t, g, "ORD")
	mustNext(t, g, "ORD")
	if s, err := g.Next(context.Background(), "ORD"); err == nil {
		t.Fatalf("Next past the mark with a dead DB = %q, want an error", s)
	}
}

// A lease that always expires before the seed arrives wastes segments; the
// call gives up after a bounded number of them instead of looping.
func TestGenerator_Next_leaseTooShortGivesUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Every reservation outlives the lease (this test's own DB handle).
	err := e.pg.DB.Callback().Update().Before("gorm:update").Register("test:slow", func(*gorm.DB) {
		time.Sleep(20 * time.Millisecond)
	})
	if err != nil {
		t.Fatal(err)
	}
	g := e.gen(t, func(o *seqgen.Options) {
		o.Segment = 10
		o.LeaseTTL = time.Millisecond
	})
	_, err = g.Next(context.Background(), "ORD")
	if err == nil || !strings.Contains(err.Error(), "dropped in a row") {
		t.Fatalf("Next = %v, want the give-up error", err)
	}
	// Each wasted reservation still moved the DB mark, by one segment.
	if m := dbMark(t, e.pg.DB, "ORD", "20261129"); m != 8*10 {
		t.Fatalf("DB mark = %d, want 8 wasted segments of 10", m)
	}
}
