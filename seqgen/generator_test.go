package seqgen_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestGenerator_Next_format(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, nil)
	for i, want := range []string{"ORD2026112900001", "ORD2026112900002", "ORD2026112900003"} {
		if got := mustNext(t, g, "ORD"); got != want {
			t.Fatalf("Next #%d = %q, want %q", i+1, got, want)
		}
	}
	if got := mustNext(t, g, "REF"); got != "REF2026112900001" {
		t.Fatalf("other biz = %q, want its own sequence", got)
	}

	custom := e.gen(t, func(o *seqgen.Options) {
		o.Width = 8
		o.DateLayout = "060102"
		o.Prefix = func(biz string) string { return "X-" + biz + "-" }
	})
	if got := mustNext(t, custom, "INV"); got != "X-INV-26112900000001" {
		t.Fatalf("custom format = %q", got)
	}
}

func TestGenerator_NextN_oneRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	client := e.r.NewClient(t)
	var cmds atomic.Int64
	client.AddHook(countHook{&cmds})
	g := newGen(t, client, e.pg.DB, e.opts(nil))
	mustNext(t, g, "ORD") // seeds the counter and loads the script

	cmds.Store(0)
	got, err := g.NextN(context.Background(), "ORD", 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := cmds.Load(); n != 1 {
		t.Fatalf("NextN(10) sent %d Redis commands, want 1", n)
	}
	for i, s := range got {
		if want := fmt.Sprintf("ORD202611290%04d", i+2); s != want {
			t.Fatalf("NextN[%d] = %q, want %q", i, s, want)
		}
	}
	cmds.Store(0)
	mustNext(t, g, "ORD")
	if n := cmds.Load(); n != 1 {
		t.Fatalf("warm Next sent %d Redis commands, want 1", n)
	}
}

// countHook counts the commands a client sends.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// The counter starts above the DB mark, never at 0, when Redis has no key.
func TestGenerator_Next_seedsFromDBMark(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	row := schema.SeqSegment{Biz: "ORD", Day: "20261129", HighWater: 500, UpdatedAt: time.Now()}
	if err := e.pg.DB.Create(&row).Error; err != nil {
		t.Fatal(err)
	}
	g := e.gen(t, nil)
	if got := mustNext(t, g, "ORD"); got != "ORD2026112900501" {
		t.Fatalf("first Next = %q, want 501 (above the DB mark 500)", got)
	}
	if m := dbMark(t, e.pg.DB, "ORD", "20261129"); m != 1500 {
		t.Fatalf("DB mark = %d, want 500 + one segment", m)
	}
}

func TestGenerator_Next_lostKeySkipsNeverRepeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, func(o *seqgen.Options) { o.Segment = 100 })
	for i := 1; i <= 3; i++ {
		mustNext(t, g, "ORD")
	}
	if err := testcontainers.DeleteNamespace(context.Background(), e.r.Client, e.r.Namespace); err != nil {
		t.Fatal(err)
	}
	// The first segment was (0, 100]: 4..100 are skipped, nothing repeats.
	if got := counterOf(t, mustNext(t, g, "ORD"), "ORD20261129"); got != 101 {
		t.Fatalf("after the key was lost, Next = %d, want 101 (the DB mark + 1)", got)
	}
}

func TestGenerator_Next_seedFromBusinessTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, s := range []string{"ORD2026112900007", "ORD2026112900041", "ORD2026113000099", "ORX2026112900500"} {
		if err := e.pg.DB.Create(&sample.Order{Serial: s, UserID: 1, Amount: 1}).Error; err != nil {
			t.Fatal(err)
		}
	}
	g := e.gen(t, func(o *seqgen.Options) { o.SeedFrom = seqgen.MaxSerial("orders", "serial") })
	if got := mustNext(t, g, "ORD"); got != "ORD2026112900042" {
		t.Fatalf("first Next = %q, want 42 (after the table's 41)", got)
	}
	if got := mustNext(t, g, "NEW"); got != "NEW2026112900001" {
		t.Fatalf("biz with no rows = %q, want 1", got)
	}
}

// Numbers are drawn while the fake clock crosses midnight in Shanghai: each
// call reads the clock once, so the key and the printed date always agree.
func TestGenerator_Next_rolloverAtMidnight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := time.Date(2026, 11, 29, 23, 59, 59, 999999999, shanghai)
	after := before.Add(time.Nanosecond)
	if after.UTC().Format("2006-01-02 15:04") != "2026-11-29 16:00" {
		t.Fatalf("midnight in Shanghai is %v UTC", after.UTC())
	}
	var readings atomic.Int64
	const calls, switchAt = 400, 150
	clock := func() time.Time {
		if readings.Add(1) <= switchAt {
			return before
		}
		return after
	}
	g := e.gen(t, func(o *seqgen.Options) { o.Clock = clock; o.Segment = 50 })

	var mu sync.Mutex
	got := map[string][]int64{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for i := 0; i < calls/8; i++ {
				s := mustNext(t, g, "ORD")
				mu.Lock()
				got[s[3:11]] = append(got[s[3:11]], counterOf(t, s, "ORD"+s[3:11]))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if readings.Load() != calls {
		t.Fatalf("clock read %d times for %d calls, want once per call", readings.Load(), calls)
	}
	for day, n := range map[string]int{"20261129": switchAt, "20261130": calls - switchAt} {
		nums := got[day]
		sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
		if len(nums) != n {
			t.Fatalf("day %s has %d numbers, want %d", day, len(nums), n)
		}
		for i, v := range nums {
			if v != int64(i+1) {
				t.Fatalf("day %s: numbers are not 1..%d: %v", day, n, nums)
			}
		}
		key := fmt.Sprintf("%s:seq:{ORD}:%s", e.r.Namespace, day)
		c, err := e.r.Client.Get(context.Background(), key).Int64()
		if err != nil || c != int64(n) {
			t.Fatalf("counter %s = %d (%v), want %d", key, c, err, n)
		}
	}
	if len(got) != 2 {
		t.Fatalf("numbers printed for days %v", got)
	}
}

func TestGenerator_Next_exhaustion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	g := e.gen(t, func(o *seqgen.Options) { o.Width = 2; o.Segment = 30 })
	for i := 1; i <= 99; i++ {
		if got, want := mustNext(t, g, "ORD"), fmt.Sprintf("ORD20261129%02d", i); got != want {
			t.Fatalf("Next #%d = %q, want %q", i, got, want)
		}
	}
	if s, err := g.Next(ctx, "ORD"); !errors.Is(err, seqgen.ErrExhausted) {
		t.Fatalf("100th Next = %q, %v; want ErrExhausted", s, err)
	}
	if m := dbMark(t, e.pg.DB, "ORD", "20261129"); m != 99 {
		t.Fatalf("DB mark = %d, want capped at 99", m)
	}
	// Losing the key does not reopen the day.
	if err := testcontainers.DeleteNamespace(ctx, e.r.Client, e.r.Namespace); err != nil {
		t.Fatal(err)
	}
	if s, err := g.Next(ctx, "ORD"); !errors.Is(err, seqgen.ErrExhausted) {
		t.Fatalf("Next after the key was lost = %q, %v; want ErrExhausted", s, err)
	}
}

func TestGenerator_NextN_exhaustionIsAllOrNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	g := e.gen(t, func(o *seqgen.Options) { o.Width = 2 })
	if _, err := g.NextN(ctx, "ORD", 97); err != nil {
		t.Fatal(err)
	}
	if _, err := g.NextN(ctx, "ORD", 3); !errors.Is(err, seqgen.ErrExhausted) {
		t.Fatalf("NextN(3) with 2 left = %v, want ErrExhausted", err)
	}
	got, err := g.NextN(ctx, "ORD", 2)
	if err != nil || got[0] != "ORD2026112998" || got[1] != "ORD2026112999" {
		t.Fatalf("NextN(2) = %v, %v", got, err)
	}
}

func TestGenerator_Next_overflowWiden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, func(o *seqgen.Options) { o.Width = 2; o.Overflow = seqgen.OverflowWiden })
	if _, err := g.NextN(context.Background(), "ORD", 98); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ORD2026112999", "ORD20261129100", "ORD20261129101"} {
		if got := mustNext(t, g, "ORD"); got != want {
			t.Fatalf("Next = %q, want %q", got, want)
		}
	}
}

// Once 80% of a segment is used, the next one is reserved in the
// background: the mark rises before anyone reaches it.
func TestGenerator_Next_refillsAhead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gen(t, func(o *seqgen.Options) { o.Segment = 100 })
	for i := 0; i < 80; i++ {
		mustNext(t, g, "ORD")
	}
	meta := e.r.Namespace + ":seq:{ORD}:20261129:hw"
	deadline := time.Now().Add(30 * time.Second)
	for {
		mark, err := e.r.Client.HGet(context.Background(), meta, "mark").Int64()
		if err != nil {
			t.Fatal(err)
		}
		if mark == 180 {
			break
		}
		if mark != 100 || time.Now().After(deadline) {
			t.Fatalf("Redis mark = %d, want the background refill to raise 100 to 180", mark)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if m := dbMark(t, e.pg.DB, "ORD", "20261129"); m != 180 {
		t.Fatalf("DB mark = %d, want 180", m)
	}
}

// The sample schema's orders take their serials from the generator, from
// many goroutines and two generators, and the unique index never fires.
func TestGenerator_Next_ordersUniqueIndexNeverFires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g1 := e.gen(t, func(o *seqgen.Options) { o.Segment = 50 })
	g2 := newGen(t, e.r.NewClient(t), e.pg.DB, e.opts(func(o *seqgen.Options) { o.Segment = 50 }))
	const workers, each = 12, 30
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		g := g1
		if w%2 == 1 {
			g = g2
		}
		wg.Go(func() {
			for i := 0; i < each; i++ {
				serial, err := g.Next(context.Background(), "ORD")
				if err == nil {
					err = e.pg.DB.Create(&sample.Order{Serial: serial, UserID: int64(w), Amount: 100}).Error
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating an order: %v", err)
	}
	var n int64
	if err := e.pg.DB.Model(&sample.Order{}).Distinct("serial").Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != workers*each {
		t.Fatalf("%d distinct serials, want %d", n, workers*each)
	}
}

func TestGenerator_Next_redisCluster(t *testing.T) {
	t.Parallel()
	r := testcontainers.RedisCluster(t)
	pg := testcontainers.Postgres(t)
	if err := sample.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	g := newGen(t, r.Client, pg.DB, &seqgen.Options{Namespace: r.Namespace, Location: shanghai, Clock: fixedClock(noon), Segment: 10})
	for _, biz := range []string{"ORD", "REF", "INV", "A{b}:c"} {
		for i := 1; i <= 25; i++ {
			if got, want := mustNext(t, g, biz), fmt.Sprintf("%s20261129%05d", biz, i); got != want {
				t.Fatalf("Next = %q, want %q", got, want)
			}
		}
	}
}

// When the keys vanish, callers of two processes find the counter missing
// at once; one of them reserves and seeds, the others wait for it.
func TestGenerator_Next_reseedOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	edit := func(o *seqgen.Options) { o.Segment = 100 }
	gens := []*seqgen.Generator{e.gen(t, edit), newGen(t, e.r.NewClient(t), e.pg.DB, e.opts(edit))}
	mustNext(t, gens[0], "ORD") // DB mark 100
	if err := testcontainers.DeleteNamespace(context.Background(), e.r.Client, e.r.Namespace); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for _, g := range gens {
		for w := 0; w < 6; w++ {
			wg.Go(func() {
				for i := 0; i < 5; i++ { // 60 in all: below the refill threshold
					v := counterOf(t, mustNext(t, g, "ORD"), "ORD20261129")
					mu.Lock()
					got = append(got, v)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i, v := range got {
		if v != int64(101+i) {
			t.Fatalf("numbers after the loss are not 101..160: %v", got)
		}
	}
	if m := dbMark(t, e.pg.DB, "ORD", "20261129"); m != 200 {
		t.Fatalf("DB mark = %d, want 200: exactly one re-seed reservation", m)
	}
}

// Eviction may take one key of a day and leave the other.
func TestGenerator_Next_partialKeyLoss(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	// RefillAt 1: no background refill to race with the checks below.
	g := e.gen(t, func(o *seqgen.Options) { o.Segment = 100; o.RefillAt = 1 })
	for i := 0; i < 5; i++ {
		mustNext(t, g, "ORD")
	}
	counter := e.r.Namespace + ":seq:{ORD}:20261129"

	// The mark alone is lost: the counter waits for a segment above the DB
	// mark (100) and jumps to it.
	if err := e.r.Client.Del(ctx, counter+":hw").Err(); err != nil {
		t.Fatal(err)
	}
	if got := counterOf(t, mustNext(t, g, "ORD"), "ORD20261129"); got != 101 {
		t.Fatalf("after losing the mark, Next = %d, want 101", got)
	}
	// The reservation moved the DB mark to 5 + 100 = 105.
	if m := dbMark(t, e.pg.DB, "ORD", "20261129"); m != 105 {
		t.Fatalf("DB mark = %d, want 105", m)
	}

	// The counter alone is lost: re-seeded at the DB mark.
	if err := e.r.Client.Del(ctx, counter).Err(); err != nil {
		t.Fatal(err)
	}
	if got := counterOf(t, mustNext(t, g, "ORD"), "ORD20261129"); got != 106 {
		t.Fatalf("after losing the counter, Next = %d, want 106", got)
	}
}
