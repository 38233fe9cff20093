package seqgen_test

import (
	"testing"
	"time"

	"github.com/asidekit/asidekit/seqgen"
)

// The first call of the day reserves its segment itself; the refill
// threshold then reserves the next one in the background.
func TestGenerator_Stats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, func(o *seqgen.Options) { o.Segment = 100 })
	for range 80 {
		mustNext(t, g, "ORD")
	}
	// Wait for the background reservation to be counted. Not for the DB
	// mark alone: the mark moves at COMMIT, before the refill has the
	// reply, and a Close then would cancel the refill's context and lose
	// the reply (the segment skipped, not counted: what Reserved says is
	// what this generator knows it reserved).
	deadline := time.Now().Add(30 * time.Second)
	for g.Stats().Reserved < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the background refill was not counted: %+v", g.Stats())
		}
		waitABit()
	}
	if got := dbMark(t, e.pg.DB, "ORD", "20261129"); got != 180 {
		t.Errorf("DB mark after the background refill = %d, want 180", got)
	}
	_ = g.Close() // waits for the refill to install its segment
	// One call at a time: each Next is a batch of its own.
	want := seqgen.Stats{Reserved: 2, SyncRefills: 1, BackgroundRefills: 1, Batches: 80}
	if got := g.Stats(); got != want {
		t.Fatalf("Stats after 80 numbers of a 100-number segment = %+v, want %+v", got, want)
	}
}
