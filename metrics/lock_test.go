package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/testcontainers"
)

var (
	_ metrics.LockStatser = (*lock.Locker)(nil)
	_ metrics.LockStatser = (*lock.Redlock)(nil)
)

// lockSeries are the exported series of each lock.Stats field.
var lockSeries = []struct {
	name   string
	labels []string
	field  func(lock.Stats) uint64
}{
	{"asidekit_lock_obtained_total", nil, func(s lock.Stats) uint64 { return s.Obtained }},
	{"asidekit_lock_not_obtained_total", nil, func(s lock.Stats) uint64 { return s.NotObtained }},
	{"asidekit_lock_errors_total", nil, func(s lock.Stats) uint64 { return s.Errors }},
	{"asidekit_lock_waits_total", nil, func(s lock.Stats) uint64 { return s.Waits }},
	{"asidekit_lock_wakeups_total", []string{"by", "notification"}, func(s lock.Stats) uint64 { return s.WakeupsNotified }},
	{"asidekit_lock_wakeups_total", []string{"by", "timer"}, func(s lock.Stats) uint64 { return s.WakeupsTimer }},
	{"asidekit_lock_notifications_total", nil, func(s lock.Stats) uint64 { return s.Notifications }},
	{"asidekit_lock_subscriptions_total", nil, func(s lock.Stats) uint64 { return s.Subscriptions }},
}

// checkLockSeries fails unless what reg exports for locker equals s.
func checkLockSeries(t *testing.T, reg prometheus.Gatherer, locker string, s lock.Stats) {
	t.Helper()
	for _, ls := range lockSeries {
		labels := append([]string{"locker", locker}, ls.labels...)
		if got, want := gather(t, reg, ls.name, labels...).value, ls.field(s); got != float64(want) {
			t.Errorf("%s%v = %v, Stats says %d", ls.name, labels, got, want)
		}
	}
}

func TestLockCollector_matchesStats(t *testing.T) {
	rn := testcontainers.Redis(t)
	locker, err := lock.New(rn.Client, &lock.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	reg := registry(t, metrics.NewLockCollector("main", locker))
	ctx := context.Background()

	held, err := locker.TryObtain(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.TryObtain(ctx, "job", time.Minute); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("TryObtain on a held lock: %v, want ErrNotObtained", err)
	}
	checkLockSeries(t, reg, "main", locker.Stats())

	// A waiter that gets the lock once it is released. (Whether it sleeps
	// before the release, and so counts a wake-up, is up to the scheduler:
	// TestLockCollector_everyField checks those fields.)
	got := make(chan error, 1)
	go func() {
		lk, err := locker.Obtain(ctx, "job", time.Minute, &lock.ObtainOptions{WaitTimeout: time.Minute})
		if err == nil {
			err = lk.Release(ctx)
		}
		got <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for locker.Stats().Waits == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never waited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	// Close stops the subscription, whose counters move on their own;
	// after it the snapshot is final.
	_ = locker.Close()

	s := locker.Stats()
	if s.Obtained != 2 || s.NotObtained != 1 || s.Waits != 1 {
		t.Fatalf("stats %+v: the scenario did not run as intended", s)
	}
	checkLockSeries(t, reg, "main", s)
}

func TestLockCollector_everyField(t *testing.T) {
	s := numbered[lock.Stats](t)
	checkEveryField[lock.Stats](t, metrics.NewLockCollector("x", statsFunc[lock.Stats](func() lock.Stats { return s })))
	checkLockSeries(t, registry(t, metrics.NewLockCollector("x", statsFunc[lock.Stats](func() lock.Stats { return s }))), "x", s)
}

func TestLockCollector_readsAtScrape(t *testing.T) {
	var s lock.Stats
	reg := registry(t, metrics.NewLockCollector("x", statsFunc[lock.Stats](func() lock.Stats { return s })))
	checkLockSeries(t, reg, "x", s)
	s.Obtained, s.WakeupsTimer = 5, 3
	checkLockSeries(t, reg, "x", s)
}

func TestLockCollector_register(t *testing.T) {
	src := statsFunc[lock.Stats](func() lock.Stats { return lock.Stats{Obtained: 1} })
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.NewLockCollector("a", src)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(metrics.NewLockCollector("b", src)); err != nil {
		t.Fatalf("a second locker name: %v", err)
	}
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(metrics.NewLockCollector("a", src)); !errors.As(err, &are) {
		t.Fatalf("the same locker name again: err = %v, want AlreadyRegisteredError", err)
	}
	for _, name := range []string{"a", "b"} {
		if v := gather(t, reg, "asidekit_lock_obtained_total", "locker", name).value; v != 1 {
			t.Errorf("locker %s obtained = %v, want 1", name, v)
		}
	}
}

func TestLockCollector_nilSource(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewLockCollector(name, nil) did not panic")
		}
	}()
	metrics.NewLockCollector("x", nil)
}
