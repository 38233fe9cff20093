package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// TestRun_listsWithoutBumps shows that the lists check can fail: with the
// lists' generation bumps switched off, a short run's list reads miss
// moves, creates and deletes, and the check says so. The phases after
// the main run are left out: lists are read in the main run only.
func TestRun_listsWithoutBumps(t *testing.T) {
	pg := testcontainers.Postgres(t)
	testswitch.ListBumpsOff.Store(true)
	defer testswitch.ListBumpsOff.Store(false)
	rep, err := Run(context.Background(), Config{
		PostgresDSN: pg.DSN, Seed: 12, Duration: 8 * time.Second,
		Procs: 2, Goroutines: 1, Keys: 2, Rounds: 1, OutDir: t.TempDir(), mainOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var row *Row
	for i := range rep.Rows {
		if strings.HasPrefix(rep.Rows[i].Check, "lists") {
			row = &rep.Rows[i]
		}
	}
	if row == nil {
		t.Fatal("no lists row in the report")
	}
	t.Logf("lists: %d reads, %d violations, errors %v", row.Operations, row.Violations, row.Errors)
	if row.Operations == 0 || row.Violations == 0 {
		t.Errorf("lists without bumps: %d reads, %d violations; want violations", row.Operations, row.Violations)
	}
	// The other checks are TestRun's subject (with the bumps on); a short
	// run's own findings are logged for the reader.
	for _, v := range rep.Violations {
		if v.Check != "lists" {
			t.Logf("%s: %s", v.Check, v.Msg)
		}
	}
}
