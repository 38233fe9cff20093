package chaos

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// TestRun runs a short chaos run on real servers and checks that every
// checker saw operations (the inspector, entries inspected), that faults
// were injected, and that a correct build breaks no promise. It stops
// after the main run: each phase after it has a test of its own with the
// rule on and off (TestNotFound_redisRestartedEmpty, TestFailover_phase,
// TestReplica_phase, TestCDC_phase), and the whole run with every phase
// is `make chaos`, which CI runs.
func TestRun(t *testing.T) {
	t.Parallel()
	pg := testcontainers.Postgres(t)
	var progress bytes.Buffer
	defer func() {
		if t.Failed() {
			t.Log("progress:\n" + progress.String())
		}
	}()
	rep, err := Run(context.Background(), Config{
		PostgresDSN: pg.DSN, Seed: 11, Duration: 10 * time.Second,
		Procs: 2, Goroutines: 3, Keys: 3, Rounds: 2, OutDir: t.TempDir(),
		Log: &progress, mainOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	t.Log("\n" + out.String())
	if len(rep.Faults) == 0 {
		t.Error("no fault was injected")
	}
	if len(rep.Rows) != 11 {
		t.Fatalf("%d rows, want the main run's 11", len(rep.Rows))
	}
	if row := rep.Rows[2]; !strings.HasPrefix(row.Check, "inspector") || row.Operations == 0 {
		t.Errorf("row 3 = %+v, want the inspector's with entries inspected", row)
	}
	for _, row := range rep.Rows {
		if row.Operations == 0 {
			t.Errorf("%s: no operations", row.Check)
		}
	}
	if want := 2 * len(hotStrategies); rep.Rows[7].Operations != want {
		t.Errorf("loads: %d rounds, want %d", rep.Rows[6].Operations, want)
	}
	for _, v := range rep.Violations {
		t.Errorf("%s: %s", v.Check, v.Msg)
	}
	if rep.Failed() && !strings.HasSuffix(rep.FailureFile, ".json") {
		t.Errorf("failing run wrote no history (%q)", rep.FailureFile)
	}
}
