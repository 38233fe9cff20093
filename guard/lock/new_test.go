package lock_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

// Bad options and nil clients are refused by the constructor, with
// ErrInvalid, not reported later by every call.
func TestNew_invalidOptions(t *testing.T) {
	rn := testcontainers.Redis(t)
	for what, tc := range map[string]struct {
		client redis.UniversalClient
		opts   *lock.Options
	}{
		"nil client":      {nil, nil},
		"nil client, ns":  {nil, &lock.Options{Namespace: rn.Namespace}},
		"namespace a:b":   {rn.Client, &lock.Options{Namespace: "a:b"}},
		"namespace {x}":   {rn.Client, &lock.Options{Namespace: "{x}"}},
		"namespace 1 MB":  {rn.Client, &lock.Options{Namespace: strings.Repeat("n", 1<<20)}},
		"namespace space": {rn.Client, &lock.Options{Namespace: "a b"}},
	} {
		l, err := lock.New(tc.client, tc.opts)
		if l != nil || !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: New = %v, %v; want nil, ErrInvalid", what, l, err)
		}
	}
	l, err := lock.New(rn.Client, nil)
	if l == nil || err != nil {
		t.Fatalf("New with nil options = %v, %v", l, err)
	}
	_ = l.Close()
	l, err = lock.New(rn.Client, &lock.Options{Namespace: rn.Namespace, MinBackoff: -1, MaxBackoff: -1})
	if l == nil || err != nil {
		t.Fatalf("New with negative backoffs (the defaults) = %v, %v", l, err)
	}
	_ = l.Close()
}

func TestNewRedlock_invalidOptions(t *testing.T) {
	rn := testcontainers.Redis(t)
	c := rn.Client
	for what, tc := range map[string]struct {
		clients []redis.UniversalClient
		opts    *lock.RedlockOptions
	}{
		"no nodes":         {nil, nil},
		"empty list":       {[]redis.UniversalClient{}, nil},
		"a nil node":       {[]redis.UniversalClient{c, nil, c}, nil},
		"DriftFactor 1":    {[]redis.UniversalClient{c}, &lock.RedlockOptions{DriftFactor: 1}},
		"DriftFactor 2":    {[]redis.UniversalClient{c}, &lock.RedlockOptions{DriftFactor: 2}},
		"DriftFactor +Inf": {[]redis.UniversalClient{c}, &lock.RedlockOptions{DriftFactor: math.Inf(1)}},
		"DriftFactor NaN":  {[]redis.UniversalClient{c}, &lock.RedlockOptions{DriftFactor: math.NaN()}},
		"namespace {x}":    {[]redis.UniversalClient{c}, &lock.RedlockOptions{Namespace: "{x}"}},
		"namespace 1 MB":   {[]redis.UniversalClient{c}, &lock.RedlockOptions{Namespace: strings.Repeat("n", 1<<20)}},
	} {
		r, err := lock.NewRedlock(tc.clients, tc.opts)
		if r != nil || !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: NewRedlock = %v, %v; want nil, ErrInvalid", what, r, err)
		}
	}
	if r, err := lock.NewRedlock([]redis.UniversalClient{c}, nil); r == nil || err != nil {
		t.Fatalf("NewRedlock with nil options = %v, %v", r, err)
	}
}
