package cdc_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/asidekit/asidekit/repo/cdc"
)

// BenchmarkApply_update measures the Invalidator's cost per row change:
// one iteration is one plain-SQL UPDATE of applyRows rows, timed from its
// COMMIT returning to the Invalidator having applied it (decode, plan,
// Redis pipelines). It reports rows/s and the benchmark process's CPU per
// applied row (µs; the reader, the applier and go-redis: nothing else runs
// while it waits).
//
//	go test -run '^$' -bench Apply_update -benchtime 5x ./repo/cdc/
func BenchmarkApply_update(b *testing.B) {
	const applyRows = 50_000
	e := redisEnv(b)
	e.exec(b, `INSERT INTO users (id, email, name, created_at, updated_at)
		SELECT i, 'u' || i || '@example.com', 'before', now(), now() FROM generate_series(1, ?::bigint) i`, applyRows)
	inv := e.invalidator(b, cdc.Options{})
	run(b, inv)
	e.sync(b, inv)
	ctx := context.Background()
	var wall, cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		e.exec(b, "UPDATE users SET name = ? WHERE id <= ?", "n"+string(rune('a'+i%26)), applyRows)
		lsn := e.currentLSN(b)
		start, c0 := time.Now(), processCPU()
		if err := inv.Wait(ctx, lsn); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		cpu += processCPU() - c0
	}
	b.StopTimer()
	rows := float64(b.N * applyRows)
	b.ReportMetric(rows/wall.Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/rows, "cpu-µs/row")
}

// processCPU returns the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
