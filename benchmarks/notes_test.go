package benchmarks

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The share of keys that expire twice in the avalanche window, checked
// against a simulation of the two lifetimes.
func TestSecondExpiryShare(t *testing.T) {
	ttl := 5 * time.Second
	window := time.Duration(float64(ttl) * 1.6)
	got := secondExpiryShare(ttl, window, 0.6)
	if math.Abs(got-2.0/9) > 1e-9 {
		t.Fatalf("share at jitter 0.6, window 1.6·TTL = %v, want 2/9", got)
	}
	// Simulation on a grid of lifetimes.
	const n = 600
	lo, hi := 0.4*float64(ttl), 1.6*float64(ttl)
	twice := 0
	for i := range n {
		for k := range n {
			l1 := lo + (hi-lo)*(float64(i)+0.5)/n
			l2 := lo + (hi-lo)*(float64(k)+0.5)/n
			if l1+l2 <= float64(window) {
				twice++
			}
		}
	}
	if sim := float64(twice) / (n * n); math.Abs(sim-got) > 0.01 {
		t.Fatalf("simulated share %v, formula %v", sim, got)
	}
	// The -quick window: TTL·1.6 plus a 0.5 s tail, 1.7·TTL: 0.9²/(2·1.2²).
	if got := secondExpiryShare(ttl, window+ttl/10, 0.6); math.Abs(got-0.28125) > 1e-9 {
		t.Fatalf("share at jitter 0.6, window 1.7·TTL = %v, want 0.28125", got)
	}
	for _, c := range []struct {
		j    float64
		want float64
	}{{0, 0}, {-1, 0}, {0.1, 0}} { // at ±10% no key expires twice in 1.1·TTL
		if got := secondExpiryShare(ttl, time.Duration(float64(ttl)*(1+c.j)), c.j); got != c.want {
			t.Errorf("share at jitter %v = %v, want %v", c.j, got, c.want)
		}
	}
	// Three lifetimes of at least 0.4·TTL fit in 1.6·TTL too: the mean
	// number of loads adds P(L1+L2+L3 ≤ 1.6·TTL) = 0.4³/(6·1.2³).
	want := 1 + 2.0/9 + math.Pow(0.4/1.2, 3)/6
	if got := expectedLoads(ttl, window, 0.6); math.Abs(got-want) > 1e-9 {
		t.Fatalf("expected loads = %v, want %v", got, want)
	}
	if n := jitterReloadNote(ttl, window, 0.6); !strings.Contains(n, "22% of keys") || !strings.Contains(n, "1.23 times") {
		t.Errorf("note %q", n)
	}
	if n := jitterReloadNote(ttl, window, 0); n != "" {
		t.Errorf("note without jitter %q", n)
	}
}
