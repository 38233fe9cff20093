package cacheaside

import (
	"context"
	"hash/fnv"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// testBloom is a small in-memory Bloom filter standing in for guard/bloom.
type testBloom struct {
	bits []uint64
	m, k uint64
}

func newTestBloom(n int, fp float64) *testBloom {
	m := uint64(math.Ceil(-float64(n) * math.Log(fp) / (math.Ln2 * math.Ln2)))
	k := uint64(math.Round(float64(m) / float64(n) * math.Ln2))
	return &testBloom{bits: make([]uint64, (m+63)/64), m: m, k: k}
}

func (b *testBloom) hashes(id string) (uint64, uint64) {
	h := fnv.New64a()
	h.Write([]byte(id))
	x := h.Sum64()
	return x, x>>33 | 1
}

func (b *testBloom) Add(id string) {
	h1, h2 := b.hashes(id)
	for i := uint64(0); i < b.k; i++ {
		p := (h1 + i*h2) % b.m
		b.bits[p/64] |= 1 << (p % 64)
	}
}

func (b *testBloom) MightContain(_ context.Context, id string) (bool, error) {
	h1, h2 := b.hashes(id)
	for i := uint64(0); i < b.k; i++ {
		p := (h1 + i*h2) % b.m
		if b.bits[p/64]&(1<<(p%64)) == 0 {
			return false, nil
		}
	}
	return true, nil
}

// penetrate reads 1,000 distinct absent ids 10 times each (10,000 reads;
// each round reads every id once, concurrently) and returns the ids the
// loader was called with, with their call counts.
func penetrate(t *testing.T, e *Entity[user]) map[string]int {
	t.Helper()
	var mu sync.Mutex
	calls := map[string]int{}
	load := func(ctx context.Context, id string) (user, error) {
		mu.Lock()
		calls[id]++
		mu.Unlock()
		return user{}, ErrNotFound
	}
	var unexpected atomic.Int64
	for round := 0; round < 10; round++ {
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < 1000; i += 8 {
					if _, err := e.Get(context.Background(), "absent-"+strconv.Itoa(i), load); err != ErrNotFound {
						unexpected.Add(1)
					}
				}
			}()
		}
		wg.Wait()
	}
	if n := unexpected.Load(); n != 0 {
		t.Fatalf("%d reads did not return ErrNotFound", n)
	}
	return calls
}

func TestPenetration_nullCaching(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user", Policy{NullTTL: time.Minute, Strategy: SingleFlight})
	calls := penetrate(t, e)
	total := 0
	for id, n := range calls {
		if n != 1 {
			t.Fatalf("id %s loaded %d times", id, n)
		}
		total += n
	}
	if total != 1000 {
		t.Fatalf("loader calls = %d, want 1000", total)
	}
	if s := e.Stats(); s.NullHits != 9000 || s.Loads != 1000 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestPenetration_filter(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	bf := newTestBloom(10000, 0.01)
	for i := 0; i < 10000; i++ {
		bf.Add("present-" + strconv.Itoa(i))
	}
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user",
		Policy{NullTTL: time.Minute, Strategy: SingleFlight, Filter: bf})
	calls := penetrate(t, e)
	total := 0
	for id, n := range calls {
		if maybe, _ := bf.MightContain(context.Background(), id); !maybe {
			t.Fatalf("loader called for %s, which the filter rejects", id)
		}
		total += n
	}
	t.Logf("loader calls with the filter: %d (false positives)", total)
	if total > 15 {
		t.Fatalf("loader calls = %d, want at most 1.5%% of 1000", total)
	}
	if s := e.Stats(); s.Filtered != uint64(10*(1000-total)) {
		t.Fatalf("filtered = %d, want %d", s.Filtered, 10*(1000-total))
	}
}
