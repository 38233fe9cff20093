package cacheaside

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// TestPolicy_zeroMeansDefault_disabledMeansOff: a zero field is its
// documented default, Disabled switches it off, for every field that has an
// off state.
func TestPolicy_zeroMeansDefault_disabledMeansOff(t *testing.T) {
	t.Parallel()
	p, err := Policy{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if p.TTL != DefaultTTL || p.Jitter != DefaultJitter || p.NullTTL != DefaultNullTTL ||
		p.MaxConcurrentLoads != DefaultMaxConcurrentLoads || p.Grace != 0 {
		t.Errorf("zero Policy = %+v, want the documented defaults", p)
	}
	off, err := Policy{Jitter: Disabled, NullTTL: Disabled, Grace: Disabled, MaxConcurrentLoads: Disabled,
		Strategy: AsyncRefresh}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if off.Jitter != 0 || off.NullTTL != 0 || off.Grace != 0 || off.MaxConcurrentLoads >= 0 {
		t.Errorf("Disabled Policy = %+v, want jitter, null caching, grace and the load cap off", off)
	}
}

// TestPolicy_zeroNullTTLCachesAbsence: with a zero NullTTL an absent id is
// loaded once; with Disabled, on every read.
func TestPolicy_zeroNullTTLCachesAbsence(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		p     Policy
		loads int64
	}{
		{"zero", Policy{}, 1},
		{"disabled", Policy{NullTTL: Disabled}, 3},
	} {
		ld := &counter{absent: map[string]bool{"gone": true}}
		e := newEntity[user](t, c, "user-"+tc.name, tc.p)
		for i := 0; i < 3; i++ {
			_, err := e.Get(ctx, "gone", ld.load)
			mustNotFound(t, err)
		}
		if got := ld.calls.Load(); got != tc.loads {
			t.Errorf("%s NullTTL: %d loads for 3 reads of an absent id, want %d", tc.name, got, tc.loads)
		}
	}
}

func TestPolicy_badValuesMatchSentinels(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	for _, p := range []Policy{{TTL: -1}, {Jitter: 2}, {Strategy: 99}, {Beta: -1},
		{Local: &LocalPolicy{MaxEntries: -1}}, {Local: &LocalPolicy{TTL: -1}}, {Local: &LocalPolicy{NullTTL: -1}}} {
		if _, err := NewEntity[user](c, "bad", p); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewEntity(%+v) = %v, want ErrInvalid", p, err)
		}
	}
	if _, err := NewEntity[user](nil, "user", Policy{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewEntity(nil Cache) = %v, want ErrInvalid", err)
	}
	if _, err := NewEntity[user](c, "", Policy{}); !errors.Is(err, ErrInvalidID) || !errors.Is(err, ErrInvalid) {
		t.Errorf("NewEntity with an empty name = %v, want ErrInvalidID and ErrInvalid", err)
	}
	if _, err := New(nil, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(nil) = %v, want ErrInvalid", err)
	}
	if _, err := New(r.Client, &Options{Namespace: "bad{ns"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New with a bad namespace = %v, want ErrInvalid", err)
	}
	if _, err := New(r.Client, &Options{Namespace: r.Namespace, LocalInvalidation: 99}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New with an unknown LocalInvalidation = %v, want ErrInvalid", err)
	}
}
