package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNext_jitteredAndCapped(t *testing.T) {
	b := New(8*time.Millisecond, 32*time.Millisecond)
	for i, hi := range []time.Duration{8, 16, 32, 32, 32} {
		hi *= time.Millisecond
		if d := b.Next(); d < hi/2 || d > hi {
			t.Fatalf("delay %d = %v, want in [%v, %v]", i, d, hi/2, hi)
		}
	}
	b.Reset()
	if d := b.Next(); d > 8*time.Millisecond {
		t.Fatalf("after Reset: %v, want ≤ 8ms", d)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context = %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on an ended context = %v, want context.Canceled", err)
	}
	b := New(time.Hour, time.Hour)
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an ended context = %v, want context.Canceled", err)
	}
}
