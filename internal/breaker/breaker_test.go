package breaker

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	now := time.Unix(1000, 0)
	recovered := 0
	b := &Breaker{Threshold: 3, Cooldown: time.Second, Clock: func() time.Time { return now }, Recovered: func() { recovered++ }}
	for range 2 {
		b.Failure()
	}
	if !b.Allow() || b.Open() {
		t.Fatal("open before the threshold")
	}
	b.Failure()
	if b.Allow() || !b.Open() || b.Opens() != 1 || b.RetryAfter() != time.Second {
		t.Fatalf("after 3 failures: allow %v open %v opens %d retry %v", b.Allow(), b.Open(), b.Opens(), b.RetryAfter())
	}
	now = now.Add(time.Second)
	if !b.Allow() {
		t.Fatal("no probe after the cooldown")
	}
	if b.Allow() {
		t.Fatal("a second probe at once")
	}
	b.Failure() // the probe failed: open again, still one opening
	if b.Opens() != 1 || b.Allow() {
		t.Fatalf("after a failed probe: opens %d", b.Opens())
	}
	now = now.Add(time.Second)
	if !b.Allow() {
		t.Fatal("no probe after the second cooldown")
	}
	b.Success()
	if b.Open() || !b.Allow() || recovered != 1 {
		t.Fatalf("after a good probe: open %v recovered %d", b.Open(), recovered)
	}
	b.Success()
	if recovered != 1 {
		t.Fatal("Recovered called without a failure before")
	}
	var never Breaker
	for range 100 {
		never.Failure()
	}
	if !never.Allow() {
		t.Fatal("the zero Breaker opened")
	}
}
