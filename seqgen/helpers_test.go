package seqgen_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Asia/Shanghai on machines without zoneinfo

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

// shanghai is the zone of every test.
var shanghai = mustZone("Asia/Shanghai")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// noon is a fixed instant in the middle of 2026-11-29 in Shanghai, far from
// any midnight.
var noon = time.Date(2026, 11, 29, 12, 0, 0, 0, shanghai)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// env is a real Redis namespace and PostgreSQL database with the schema.
type env struct {
	r  *testcontainers.RedisNamespace
	pg *testcontainers.PostgresDB
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{r: testcontainers.Redis(t), pg: testcontainers.Postgres(t)}
	if err := sample.Migrate(e.pg.DB); err != nil {
		t.Fatal(err)
	}
	return e
}

// opts returns options for this env's namespace, Shanghai and a fixed
// clock at noon; edit may change them.
func (e *env) opts(edit func(*seqgen.Options)) *seqgen.Options {
	// RedisTimeout: a call slowed by a busy machine must not turn into a
	// fallback to the DB (which skips numbers) in tests that expect exact
	// numbers; the tests of the timeout set their own.
	o := &seqgen.Options{Namespace: e.r.Namespace, Location: shanghai, Clock: fixedClock(noon), RedisTimeout: time.Minute}
	if edit != nil {
		edit(o)
	}
	return o
}

func (e *env) gen(t testing.TB, edit func(*seqgen.Options)) *seqgen.Generator {
	t.Helper()
	return newGen(t, e.r.Client, e.pg.DB, e.opts(edit))
}

func newGen(t testing.TB, client redis.UniversalClient, db *gorm.DB, o *seqgen.Options) *seqgen.Generator {
	t.Helper()
	g, err := seqgen.New(client, db, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// dbMark reads the DB high-water mark of (biz, day), 0 if none.
func dbMark(t testing.TB, db *gorm.DB, biz, day string) int64 {
	t.Helper()
	var rows []schema.SeqSegment
	if err := db.Where("biz = ? AND day = ?", biz, day).Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		return 0
	}
	return rows[0].HighWater
}

// counterOf parses the counter of serial, which must start with prefix.
func counterOf(t testing.TB, serial, prefix string) int64 {
	t.Helper()
	rest, ok := strings.CutPrefix(serial, prefix)
	if !ok {
		t.Fatalf("serial %q does not start with %q", serial, prefix)
	}
	v, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		t.Fatalf("serial %q: %v", serial, err)
	}
	return v
}

func mustNext(t testing.TB, g *seqgen.Generator, biz string) string {
	t.Helper()
	s, err := g.Next(context.Background(), biz)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitABit yields to the workers while a test waits for progress.
func waitABit() { time.Sleep(time.Millisecond) }
