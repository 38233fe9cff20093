package chaos_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/asidekit/asidekit/chaos"
)

// A one-minute run against the PostgreSQL server named by
// ASIDEKIT_POSTGRES_DSN, with two private redis-server processes from PATH.
// Run again with the same Seed to replay the fault schedule.
func ExampleRun() {
	rep, err := chaos.Run(context.Background(), chaos.Config{
		PostgresDSN: os.Getenv("ASIDEKIT_POSTGRES_DSN"),
		Seed:        42,
		Duration:    40 * time.Second,
		OutDir:      "out/chaos",
	})
	if err != nil {
		fmt.Println("no run:", err)
		return
	}
	rep.Print(os.Stdout) // check | faults | operations | violations | errors by kind | divergent keys | recovery time
	if rep.Failed() {
		fmt.Println("failing history and seed in", rep.FailureFile)
	}
}
