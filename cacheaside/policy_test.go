package cacheaside

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// Every write's TTL is jittered, values and nulls alike, uniformly over
// [TTL·(1−J), TTL·(1+J)].
func TestEntity_jitteredTTLs(t *testing.T) {
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user",
		Policy{TTL: 100 * time.Second, NullTTL: 10 * time.Second, Jitter: 0.2})
	ctx := context.Background()
	var l counter
	l.absent = map[string]bool{}
	for i := 0; i < 200; i++ {
		if i%2 == 1 {
			l.absent[strconv.Itoa(i)] = true
		}
	}
	for i := 0; i < 200; i++ {
		_, _ = e.Get(ctx, strconv.Itoa(i), l.load)
	}
	check := func(odd bool, lo, hi time.Duration) {
		t.Helper()
		minT, maxT := time.Duration(1<<62), time.Duration(0)
		for i := 0; i < 200; i++ {
			if (i%2 == 1) != odd {
				continue
			}
			key, _ := e.Key(strconv.Itoa(i))
			ttl := r.Client.PTTL(ctx, key).Val()
			minT, maxT = min(minT, ttl), max(maxT, ttl)
		}
		if minT < lo-time.Second || maxT > hi {
			t.Fatalf("TTLs in [%v, %v], want within [%v, %v]", minT, maxT, lo, hi)
		}
		// 100 uniform draws spread over most of the range.
		if spread := maxT - minT; spread < (hi-lo)*6/10 {
			t.Fatalf("TTLs in [%v, %v]: not spread over [%v, %v]", minT, maxT, lo, hi)
		}
	}
	check(false, 80*time.Second, 120*time.Second)
	check(true, 8*time.Second, 12*time.Second)
}

// EarlyRefresh recomputes a hot key before it expires: readers never miss.
func TestEarlyRefresh_beforeExpiry(t *testing.T) {
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user",
		Policy{TTL: 400 * time.Millisecond, Jitter: -1, Strategy: EarlyRefresh, Beta: 3})
	ctx := context.Background()
	var loads atomic.Int64
	load := func(ctx context.Context, id string) (user, error) {
		loads.Add(1)
		time.Sleep(20 * time.Millisecond) // Δ
		return user{ID: id}, nil
	}
	if _, err := e.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if _, err := e.Get(ctx, "1", load); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	s := e.Stats()
	t.Logf("stats %+v", s)
	if s.Refreshes == 0 || s.Misses != 1 {
		t.Fatalf("refreshes = %d, misses = %d; want early refreshes and only the first miss", s.Refreshes, s.Misses)
	}
}

type recordingObserver struct {
	mu     sync.Mutex
	events map[string]int
	loadD  time.Duration
}

func (o *recordingObserver) OnEvent(entity string, ev Event, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events[entity+"/"+ev.String()]++
	o.loadD += d
}

func TestObserver_receivesEvents(t *testing.T) {
	r := testcontainers.Redis(t)
	o := &recordingObserver{events: map[string]int{}}
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, &Options{Observer: o}), "user", Policy{NullTTL: time.Minute})
	ctx := context.Background()
	l := counter{absent: map[string]bool{"x": true}}
	for i := 0; i < 2; i++ {
		_, _ = e.Get(ctx, "1", l.load)
		_, _ = e.Get(ctx, "x", l.load)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	want := map[string]int{"user/miss": 2, "user/load": 2, "user/hit": 1, "user/null_hit": 1}
	for k, n := range want {
		if o.events[k] != n {
			t.Fatalf("events = %v, want %v", o.events, want)
		}
	}
	if o.loadD <= 0 {
		t.Fatal("no load latency reported")
	}
}

// upperCodec is a Codec that is not JSON on the wire.
type upperCodec struct{}

func (upperCodec) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	return []byte(strings.ToUpper(string(b))), err
}
func (upperCodec) Unmarshal(data []byte, v any) error {
	return json.Unmarshal([]byte(strings.ToLower(string(data))), v)
}

func TestCache_customCodec(t *testing.T) {
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, &Options{Codec: upperCodec{}}), "user", Policy{})
	ctx := context.Background()
	var l counter
	if _, err := e.Get(ctx, "a", l.load); err != nil {
		t.Fatal(err)
	}
	u, err := e.Get(ctx, "a", l.load)
	if err != nil || u.Name != "n-a" || l.calls.Load() != 1 {
		t.Fatalf("Get = %+v, %v (%d loads)", u, err, l.calls.Load())
	}
	key, _ := e.Key("a")
	raw, _ := r.Client.Get(ctx, key).Bytes()
	if !strings.Contains(string(raw[headerLen:]), `"NAME":"N-A"`) {
		t.Fatalf("payload %q not written by the codec", raw[headerLen:])
	}
}

func TestEntity_valueTooLarge(t *testing.T) {
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, &Options{MaxValueSize: 100})
	e := newEntity[user](t, c, "user", Policy{})
	ctx := context.Background()
	big := user{ID: "1", Name: strings.Repeat("x", 200)}
	if err := e.Set(ctx, "1", big); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Set: err = %v, want ErrValueTooLarge", err)
	}
	// A loaded value that is too large is served, not cached.
	for i := 0; i < 2; i++ {
		u, err := e.Get(ctx, "1", func(ctx context.Context, id string) (user, error) { return big, nil })
		if err != nil || u.Name != big.Name {
			t.Fatalf("Get = %v", err)
		}
	}
	if s := e.Stats(); s.Loads != 2 || s.CacheErrors != 2 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestPolicy_defaults(t *testing.T) {
	p, err := Policy{Strategy: AsyncRefresh}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if p.TTL != DefaultTTL || p.Jitter != DefaultJitter || p.Grace != DefaultTTL || p.LockTTL != DefaultLockTTL ||
		p.WaitTimeout != DefaultWaitTimeout || p.MaxConcurrentLoads != DefaultMaxConcurrentLoads || p.Beta != 1 || p.RefreshTimeout != DefaultLockTTL {
		t.Fatalf("defaults = %+v", p)
	}
	for _, bad := range []Policy{{TTL: -1}, {Jitter: 1.5}, {Strategy: 9}, {Beta: -1}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if s := Strategy(7).String(); s != "Strategy(7)" || Mutex.String() != "Mutex" {
		t.Fatalf("String = %q", s)
	}
	if _, err := New(nil, nil); err == nil {
		t.Fatal("nil client accepted")
	}
}
