package cdc_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/repo/cdc"
)

// BenchmarkApply_update measures the Invalidator's cost per row change:
// one iteration is one plain-SQL UPDATE of applyRows rows, timed from its
// COMMIT returning to the Invalidator having applied it (decode, plan,
// Redis pipelines). It reports rows/s and the benchmark process's CPU per
// applied row (µs; the reader, the applier and go-redis: nothing else runs
// while it waits), and Redis's CPU per applied row (µs, from INFO cpu:
// any other client of that Redis adds to it; run it on a Redis of its own,
// ASIDEKIT_REDIS_ADDR, for a clean figure), and the process's heap
// allocations per applied row (the reader's and applier's; go-redis's).
//
// It runs with the table's default REPLICA IDENTITY and rows the
// Invalidator does not remember (identity=default, Options.RecentRows
// negative: the log holds no old row, so the UPDATE drops each row's
// email mapping and adds the email to its filter, as the email may have
// changed), with the default identity and every row remembered
// (identity=default_remembered: an untimed UPDATE first), and with FULL
// (the old email is in the log): in the last two an unchanged email needs
// nothing.
//
//	go test -run '^$' -bench Apply_update -benchtime 5x ./repo/cdc/
func BenchmarkApply_update(b *testing.B) {
	for _, identity := range []string{"default", "default_remembered", "full"} {
		b.Run("identity="+identity, func(b *testing.B) { benchApplyUpdate(b, identity) })
	}
}

func benchApplyUpdate(b *testing.B, variant string) {
	const applyRows = 50_000
	e := redisEnv(b)
	identity, o := variant, cdc.Options{}
	switch variant {
	case "default":
		o.RecentRows = -1
	case "default_remembered":
		identity = "default"
	}
	e.exec(b, "ALTER TABLE users REPLICA IDENTITY "+identity)
	e.exec(b, `INSERT INTO users (id, email, name, created_at, updated_at)
		SELECT i, 'u' || i || '@example.com', 'before', now(), now() FROM generate_series(1, ?::bigint) i`, applyRows)
	inv := e.invalidator(b, o)
	run(b, inv)
	e.sync(b, inv)
	if variant == "default_remembered" {
		e.exec(b, "UPDATE users SET name = 'seen' WHERE id <= ?", applyRows)
		e.sync(b, inv)
	}
	measureApply(b, e, inv, applyRows, nil, func(i int) {
		e.exec(b, "UPDATE users SET name = ? WHERE id <= ?", "n"+string(rune('a'+i%26)), applyRows)
	})
}

// BenchmarkApply_truncateInsert measures what BEGIN; TRUNCATE users;
// INSERT applyRows rows; COMMIT costs the Invalidator, with the same
// figures as BenchmarkApply_update (per inserted row). Before each
// iteration, untimed, an UPDATE of every row leaves a version key per row
// and per email mapping, as the writes of a live table do: the TRUNCATE's
// InvalidateAll has them to walk.
//
//	go test -run '^$' -bench Apply_truncateInsert -benchtime 3x ./repo/cdc/
func BenchmarkApply_truncateInsert(b *testing.B) {
	const applyRows = 50_000
	e := redisEnv(b)
	insert := `INSERT INTO users (id, email, name, created_at, updated_at)
		SELECT i, 'u' || i || '@example.com', 'before', now(), now() FROM generate_series(1, ?::bigint) i`
	e.exec(b, insert, applyRows)
	inv := e.invalidator(b, cdc.Options{})
	run(b, inv)
	e.sync(b, inv)
	ctx := context.Background()
	measureApply(b, e, inv, applyRows, func(int) {
		e.exec(b, "UPDATE users SET name = 'touched'")
		if err := inv.Wait(ctx, e.currentLSN(b)); err != nil {
			b.Fatal(err)
		}
	}, func(int) {
		err := e.db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("TRUNCATE users").Error; err != nil {
				return err
			}
			return tx.Exec(insert, applyRows).Error
		})
		if err != nil {
			b.Fatal(err)
		}
	})
}

// measureApply runs b.N iterations of prepare (untimed) and write, and
// reports the Invalidator's cost of applying each write: the time from
// the write's return to inv having applied it, and the figures
// BenchmarkApply_update describes, per row of rows.
func measureApply(b *testing.B, e *env, inv *cdc.Invalidator, rows int, prepare, write func(i int)) {
	ctx := context.Background()
	var wall, cpu, rcpu time.Duration
	var allocs uint64
	var ms runtime.MemStats
	b.ResetTimer()
	for i := range b.N {
		if prepare != nil {
			b.StopTimer()
			prepare(i)
			b.StartTimer()
		}
		write(i)
		lsn := e.currentLSN(b)
		runtime.ReadMemStats(&ms)
		a0 := ms.Mallocs
		start, c0, r0 := time.Now(), processCPU(), redisCPU(b, e)
		if err := inv.Wait(ctx, lsn); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		cpu += processCPU() - c0
		rcpu += redisCPU(b, e) - r0
		runtime.ReadMemStats(&ms)
		allocs += ms.Mallocs - a0
	}
	b.StopTimer()
	total := float64(b.N * rows)
	b.ReportMetric(total/wall.Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/total, "cpu-µs/row")
	b.ReportMetric(float64(rcpu.Microseconds())/total, "redis-cpu-µs/row")
	b.ReportMetric(float64(allocs)/total, "allocs/row")
}

// redisCPU returns the CPU time the test's Redis server has used (user and
// system, from INFO cpu).
func redisCPU(b *testing.B, e *env) time.Duration {
	info, err := e.rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_user" || name == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// processCPU returns the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
