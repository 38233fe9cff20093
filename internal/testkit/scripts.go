package testkit

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ScriptMicros returns the µs the server of c has spent in EVAL and
// EVALSHA (INFO commandstats): on a private server, the time its scripts
// took, which a loaded client machine does not distort.
func ScriptMicros(tb testing.TB, c *redis.Client) float64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || name != "cmdstat_eval" && name != "cmdstat_evalsha" {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				us, err := strconv.ParseFloat(v, 64)
				if err != nil {
					tb.Fatal(err)
				}
				total += us
			}
		}
	}
	return total
}

// ScriptLoop runs op b.N times and reports the server's script time per op
// as the metric srv-µs/op.
func ScriptLoop(b *testing.B, c *redis.Client, op func() error) {
	b.Helper()
	before := ScriptMicros(b, c)
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((ScriptMicros(b, c)-before)/float64(b.N), "srv-µs/op")
}
