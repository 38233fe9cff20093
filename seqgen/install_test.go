package seqgen

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// scriptEnv runs next.lua and install.lua directly against real Redis.
type scriptEnv struct {
	t   *testing.T
	ctx context.Context
	rdb redis.UniversalClient
	k   keyset
}

func newScriptEnv(t *testing.T) *scriptEnv {
	r := testcontainers.Redis(t)
	c := r.Namespace + ":seq:{ORD}:20261129"
	return &scriptEnv{t: t, ctx: context.Background(), rdb: r.Client,
		k: keyset{counter: c, meta: c + ":hw", lease: c + ":lease"}}
}

func (e *scriptEnv) next(n int64, token string) nextReply {
	e.t.Helper()
	return e.nextArgs(n, token, "0")
}

// upto runs next.lua for up to n numbers, as a batch of joined calls does.
func (e *scriptEnv) upto(n int64, token string) nextReply {
	e.t.Helper()
	return e.nextArgs(n, token, "1")
}

func (e *scriptEnv) nextArgs(n int64, token, upto string) nextReply {
	e.t.Helper()
	v, err := nextScript.Run(e.ctx, e.rdb, e.k.list(), n, 99999, 20, token, 5000, upto).Int64Slice()
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := parseNext(v)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *scriptEnv) install(lo, hi int64, seed bool, token string) int64 {
	e.t.Helper()
	s := "0"
	if seed {
		s = "1"
	}
	v, err := installScript.Run(e.ctx, e.rdb, e.k.list(), lo, hi, s, 172800000, token).Int64()
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// state returns counter, mark, next lo and hi (-1 when absent).
func (e *scriptEnv) state() (c, mark, lo, hi int64) {
	e.t.Helper()
	c, err := e.rdb.Get(e.ctx, e.k.counter).Int64()
	if err == redis.Nil {
		c = -1
	} else if err != nil {
		e.t.Fatal(err)
	}
	vals, err := e.rdb.HMGet(e.ctx, e.k.meta, "mark", "lo", "hi").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	out := [3]int64{-1, -1, -1}
	for i, v := range vals {
		if s, ok := v.(string); ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				e.t.Fatal(err)
			}
			out[i] = n
		}
	}
	return c, out[0], out[1], out[2]
}

func (e *scriptEnv) want(c, mark, lo, hi int64) {
	e.t.Helper()
	gc, gm, gl, gh := e.state()
	if gc != c || gm != mark || gl != lo || gh != hi {
		e.t.Fatalf("state = counter %d mark %d next (%d, %d], want %d %d (%d, %d]", gc, gm, gl, gh, c, mark, lo, hi)
	}
}

func TestInstall_seed_needsLease(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	if r := e.install(0, 100, true, "tok"); r != installNoSeed {
		t.Fatalf("seed without lease = %d, want %d", r, installNoSeed)
	}
	e.want(-1, -1, -1, -1)

	r := e.next(1, "tok")
	if r.status != statusNeedSeed || !r.leased {
		t.Fatalf("next on missing counter = %+v, want need seed with lease", r)
	}
	if got := e.install(0, 100, true, "other"); got != installNoSeed {
		t.Fatalf("seed with someone else's token = %d", got)
	}
	if got := e.install(0, 100, true, "tok"); got != installSeeded {
		t.Fatalf("seed = %d, want %d", got, installSeeded)
	}
	e.want(0, 100, -1, -1)
	if n, _ := e.rdb.Exists(e.ctx, e.k.lease).Result(); n != 0 {
		t.Fatal("lease not released by the seed")
	}
	// A replay of the same seed (a client retry) changes nothing.
	if got := e.install(0, 100, true, "tok"); got != installDropped {
		t.Fatalf("replayed seed = %d, want dropped", got)
	}
	e.want(0, 100, -1, -1)
	// A refill may never create the counter.
	if err := e.rdb.Del(e.ctx, e.k.counter).Err(); err != nil {
		t.Fatal(err)
	}
	if got := e.install(100, 200, false, "tok"); got != installNoSeed {
		t.Fatalf("refill on missing counter = %d", got)
	}
	if c, _, _, _ := e.state(); c != -1 {
		t.Fatal("refill created the counter")
	}
}

func TestInstall_segments_extendBufferMergeDrop(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	if r := e.next(1, "a"); !r.leased {
		t.Fatal("no lease")
	}
	e.install(0, 100, true, "a")

	if got := e.install(100, 150, false, "x"); got != installExtended {
		t.Fatalf("contiguous = %d, want extended", got)
	}
	e.want(0, 150, -1, -1)
	if got := e.install(300, 400, false, "x"); got != installBuffered {
		t.Fatalf("gap = %d, want buffered", got)
	}
	e.want(0, 150, 300, 400)
	if got := e.install(400, 450, false, "x"); got != installBuffered {
		t.Fatalf("after next = %d, want buffered", got)
	}
	if got := e.install(250, 300, false, "x"); got != installBuffered {
		t.Fatalf("before next = %d, want buffered", got)
	}
	e.want(0, 150, 250, 450)
	if got := e.install(500, 600, false, "x"); got != installDropped {
		t.Fatalf("second gap = %d, want dropped", got)
	}
	if got := e.install(100, 150, false, "x"); got != installDropped {
		t.Fatalf("replayed extension = %d, want dropped", got)
	}
	if got := e.install(250, 300, false, "x"); got != installDropped {
		t.Fatalf("replayed prepend = %d, want dropped", got)
	}
	// Filling the hole merges the buffer into the current range.
	if got := e.install(150, 250, false, "x"); got != installExtended {
		t.Fatalf("hole = %d, want extended", got)
	}
	e.want(0, 450, -1, -1)
}

func TestNext_jumpsToBufferedSegment(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	e.next(1, "a")
	e.install(0, 2, true, "a")
	e.install(10, 20, false, "x")
	for want := int64(1); want <= 2; want++ {
		if r := e.next(1, "b"); r.status != statusIssued || r.value != want {
			t.Fatalf("next = %+v, want %d", r, want)
		}
	}
	// 11 leaves 9 <= low (20) in the segment: b gets the refill lease.
	if r := e.next(1, "b"); r.status != statusIssued || r.value != 11 || !r.leased {
		t.Fatalf("next past the mark = %+v, want 11 from the buffer, with the refill lease", r)
	}
	e.want(11, 20, -1, -1)
	// A batch that does not fit asks for a segment and issues nothing.
	if r := e.next(10, "c"); r.status != statusNeedSegment || r.value != 11 || r.leased {
		t.Fatalf("next(10) = %+v, want need segment at 11, lease held by b", r)
	}
	if err := e.rdb.Del(e.ctx, e.k.lease).Err(); err != nil {
		t.Fatal(err)
	}
	if r := e.next(10, "c"); r.status != statusNeedSegment || !r.leased {
		t.Fatalf("next(10) = %+v, want need segment with the lease", r)
	}
	if r := e.next(1, "d"); r.status != statusIssued || r.value != 12 || r.leased {
		t.Fatalf("next = %+v, want 12 without the lease (held by c)", r)
	}
}

func TestInstall_metaLost(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	e.next(1, "a")
	e.install(0, 100, true, "a")
	for i := 0; i < 5; i++ {
		e.next(1, "b")
	}
	if err := e.rdb.Del(e.ctx, e.k.meta).Err(); err != nil {
		t.Fatal(err)
	}
	if r := e.next(1, "c"); r.status != statusNeedSegment || r.value != 5 {
		t.Fatalf("next without mark = %+v, want need segment at 5", r)
	}
	if got := e.install(3, 50, false, "c"); got != installDropped {
		t.Fatalf("segment below the counter = %d, want dropped", got)
	}
	if got := e.install(100, 200, false, "c"); got != installExtended {
		t.Fatalf("segment above = %d, want installed", got)
	}
	e.want(100, 200, -1, -1)
}

func TestNext_refillLeaseAtThreshold(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	e.next(1, "a")
	e.install(0, 100, true, "a")
	for i := int64(1); i <= 79; i++ {
		if r := e.next(1, "b"); r.leased {
			t.Fatalf("lease handed out at %d, before the threshold", r.value)
		}
	}
	if r := e.next(1, "c"); r.value != 80 || !r.leased {
		t.Fatalf("next = %+v, want 80 with the refill lease", r)
	}
	if r := e.next(1, "d"); r.value != 81 || r.leased {
		t.Fatalf("next = %+v, want 81 without a second lease", r)
	}
}

// A refill that finds the counter lost (evicted, expired or deleted while
// its lease survived) gives its lease up, so that the next caller seeds at
// once instead of waiting LeaseTTL for a holder that can no longer install.
func TestInstall_refillOnLostCounter_releasesLease(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	if r := e.next(1, "a"); r.status != statusNeedSeed || !r.leased {
		t.Fatalf("first next = %+v, want need seed with lease", r)
	}
	if got := e.install(0, 100, true, "a"); got != installSeeded {
		t.Fatalf("seed = %d, want %d", got, installSeeded)
	}
	if r := e.next(85, "b"); r.status != statusIssued || !r.leased {
		t.Fatalf("next near the mark = %+v, want issued with the refill lease", r)
	}
	if err := e.rdb.Del(e.ctx, e.k.counter, e.k.meta).Err(); err != nil {
		t.Fatal(err)
	}
	if got := e.install(100, 200, false, "b"); got != installNoSeed {
		t.Fatalf("refill on the lost counter = %d, want %d", got, installNoSeed)
	}
	if n, err := e.rdb.Exists(e.ctx, e.k.lease).Result(); err != nil || n != 0 {
		t.Fatalf("lease still held after the refill gave up (exists %d, %v)", n, err)
	}
	if r := e.next(1, "c"); r.status != statusNeedSeed || !r.leased {
		t.Fatalf("next after the refill gave up = %+v, want need seed with lease", r)
	}
	// Someone else's lease stays.
	if got := e.install(100, 200, false, "b"); got != installNoSeed {
		t.Fatalf("replayed refill = %d, want %d", got, installNoSeed)
	}
	if v, err := e.rdb.Get(e.ctx, e.k.lease).Result(); err != nil || v != "c" {
		t.Fatalf("lease = %q, %v; want c's", v, err)
	}
}

// A batch of joined calls takes what is left of the segment, then of the
// buffered one, then of the day; a full-size call would take none.
func TestNext_upto_takesWhatIsLeft(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	e.next(1, "a")
	e.install(0, 30, true, "a")
	if r := e.upto(4, "b"); r.status != statusIssued || r.value != 4 || r.count != 4 || r.leased {
		t.Fatalf("upto(4) = %+v, want 1..4 without the lease", r)
	}
	// 26 left: the batch gets them, and the refill lease (0 left <= low).
	if r := e.upto(40, "c"); r.status != statusIssued || r.value != 30 || r.count != 26 || !r.leased {
		t.Fatalf("upto(40) with 26 left = %+v, want 5..30 with the refill lease", r)
	}
	if r := e.upto(3, "d"); r.status != statusNeedSegment || r.value != 30 || r.leased || r.count != 0 {
		t.Fatalf("upto at the mark = %+v, want need segment, lease held by c", r)
	}
	e.install(50, 52, false, "c") // buffered: (50, 52]
	if r := e.upto(5, "d"); r.status != statusIssued || r.value != 52 || r.count != 2 {
		t.Fatalf("upto(5) at the mark with (50, 52] buffered = %+v, want 51..52", r)
	}
	e.want(52, 52, -1, -1)

	// The day's end: max is 99999.
	if err := e.rdb.Set(e.ctx, e.k.counter, 99997, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.HSet(e.ctx, e.k.meta, "mark", 99999).Err(); err != nil {
		t.Fatal(err)
	}
	if r := e.next(3, "e"); r.status != statusExhausted {
		t.Fatalf("next(3) with 2 left in the day = %+v, want exhausted", r)
	}
	if r := e.upto(3, "e"); r.status != statusIssued || r.value != 99999 || r.count != 2 {
		t.Fatalf("upto(3) with 2 left in the day = %+v, want the last 2", r)
	}
	if r := e.upto(1, "e"); r.status != statusExhausted {
		t.Fatalf("upto at the day's end = %+v, want exhausted", r)
	}
}

// go-redis may send a script call again after a lost reply: the replay of
// a call that took the lease still holds it (same token), so the refill is
// not left to wait LeaseTTL for a holder that never heard it had it.
func TestNext_replayKeepsLease(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	for i := range 2 {
		if r := e.next(1, "a"); r.status != statusNeedSeed || !r.leased {
			t.Fatalf("run %d of a call on a missing counter = %+v, want need seed with the lease", i+1, r)
		}
	}
	if r := e.next(1, "b"); r.leased {
		t.Fatalf("another call = %+v, took a's lease", r)
	}
}
