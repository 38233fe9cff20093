package seqgen_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/asidekit/asidekit/seqgen"
)

// benchGoroutines is how many goroutines each benchmark runs.
const benchGoroutines = 16

// runParallel16 runs op from 16 goroutines and reports ids per second;
// perOp is how many ids one call of op yields.
func runParallel16(b *testing.B, perOp int, op func(context.Context) error) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((benchGoroutines + procs - 1) / procs)
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "ids/s")
}

// BenchmarkNext: the generator's hot path, one Lua call per id.
func BenchmarkNext(b *testing.B) {
	e := newEnv(b)
	g := e.gen(b, func(o *seqgen.Options) { o.Width = 12 })
	b.Run("goroutines=16", func(b *testing.B) {
		runParallel16(b, 1, func(ctx context.Context) error {
			_, err := g.Next(ctx, "ORD")
			return err
		})
	})
	b.Run("NextN=10/goroutines=16", func(b *testing.B) {
		runParallel16(b, 10, func(ctx context.Context) error {
			_, err := g.NextN(ctx, "BAT", 10)
			return err
		})
	})
}

// BenchmarkPGSequence_nextval: a PostgreSQL sequence on the same server.
func BenchmarkPGSequence_nextval(b *testing.B) {
	e := newEnv(b)
	if err := e.pg.DB.Exec("CREATE SEQUENCE bench_seq").Error; err != nil {
		b.Fatal(err)
	}
	b.Run("goroutines=16", func(b *testing.B) {
		runParallel16(b, 1, func(ctx context.Context) error {
			var v int64
			return e.pg.DB.WithContext(ctx).Raw("SELECT nextval('bench_seq')").Scan(&v).Error
		})
	})
}

// BenchmarkPGRowLock_UpdateReturning: a counter row incremented under its
// row lock, the classic DB-only daily sequence.
func BenchmarkPGRowLock_UpdateReturning(b *testing.B) {
	e := newEnv(b)
	for _, q := range []string{
		"CREATE TABLE bench_counter (biz text, day text, v bigint NOT NULL, PRIMARY KEY (biz, day))",
		"INSERT INTO bench_counter VALUES ('ORD', '20261129', 0)",
	} {
		if err := e.pg.DB.Exec(q).Error; err != nil {
			b.Fatal(err)
		}
	}
	b.Run("goroutines=16", func(b *testing.B) {
		runParallel16(b, 1, func(ctx context.Context) error {
			var v int64
			return e.pg.DB.WithContext(ctx).
				Raw("UPDATE bench_counter SET v = v + 1 WHERE biz = 'ORD' AND day = '20261129' RETURNING v").
				Scan(&v).Error
		})
	})
}
