package seqgen_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
)

// The counter key is lost (evicted, expired, or deleted by a scan that
// missed the lease created meanwhile) while a background refill holds the
// lease: the refill cannot install, and gives the lease up, so the next
// call seeds a fresh segment from the DB at once. Kept, the lease would
// hold every caller for the wait's bound (5 × RedisTimeout, at most
// LeaseTTL) and then send it to the DB fallback.
func TestGenerator_counterLostDuringRefill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, func(o *seqgen.Options) {
		// A caller waits for another's lease at most 5 × RedisTimeout
		// (50 s), then falls back to the DB; the lease outlives that. Both
		// long enough that no call falls back because of load alone.
		o.Segment, o.RedisTimeout, o.LeaseTTL = 10, 10*time.Second, 2*time.Minute
	})
	ctx := context.Background()
	counter := e.r.Namespace + ":seq:{ORD}:20261129"
	mustNext(t, g, "ORD") // seeds (0, 10]

	// Hold the mark row: the background refill started at 8 (RefillAt 0.8)
	// blocks in its reservation, lease held, until the keys are gone.
	tx := e.pg.DB.Begin()
	t.Cleanup(func() { tx.Rollback() })
	var rows []schema.SeqSegment
	if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("biz = ? AND day = ?", "ORD", "20261129").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var last int64
	for range 7 {
		last = counterOf(t, mustNext(t, g, "ORD"), "ORD20261129")
	}
	if last != 8 {
		t.Fatalf("8th number = %d, want 8", last)
	}
	if n, err := e.r.Client.Exists(ctx, counter+":lease").Result(); err != nil || n != 1 {
		t.Fatalf("refill lease not held at 8 (exists %d, %v)", n, err)
	}
	if err := e.r.Client.Del(ctx, counter, counter+":hw").Err(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatal(err)
	}

	// The refill reserved (10, 18] and could not install it; the next
	// number is seeded above it, from Redis.
	got := counterOf(t, mustNext(t, g, "ORD"), "ORD20261129")
	if got <= 18 {
		t.Fatalf("number after the counter was lost = %d, want above the refill's segment (10, 18]", got)
	}
	if mark := dbMark(t, e.pg.DB, "ORD", "20261129"); got > mark {
		t.Fatalf("number %d above the DB mark %d", got, mark)
	}
	if st := g.Stats(); st.Fallbacks != 0 {
		t.Fatalf("stats %+v: the call fell back to the DB (waited for a lease nobody would use)", st)
	}
}
