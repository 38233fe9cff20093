package metrics_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/metrics"
)

// printCounters prints the non-zero counters of metric name in reg.
func printCounters(reg prometheus.Gatherer, name string) {
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 {
				fmt.Print(name, "{")
				for i, l := range m.GetLabel() {
					if i > 0 {
						fmt.Print(",")
					}
					fmt.Printf("%s=%q", l.GetName(), l.GetValue())
				}
				fmt.Println("}", v)
			}
		}
	}
}

func Example() {
	srv, err := miniredis.Run() // in production: your Redis
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()

	// One observer per process, registered once; serve reg with promhttp.
	reg := prometheus.NewRegistry()
	obs, err := metrics.NewCacheObserver(nil)
	if err != nil {
		panic(err)
	}
	reg.MustRegister(obs)

	c, err := cacheaside.New(client, &cacheaside.Options{Observer: obs})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	users, err := cacheaside.NewEntity[string](c, "user", cacheaside.Policy{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	load := func(ctx context.Context, id string) (string, error) { return "Ada", nil }
	for range 3 {
		if _, err := users.Get(context.Background(), "1", load); err != nil {
			panic(err)
		}
	}
	printCounters(reg, "asidekit_cache_events_total")
	// Output:
	// asidekit_cache_events_total{entity="user",event="hit"} 2
	// asidekit_cache_events_total{entity="user",event="load"} 1
	// asidekit_cache_events_total{entity="user",event="miss"} 1
}

func ExampleNewLockCollector() {
	srv, err := miniredis.Run() // in production: your Redis
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()

	locker, err := lock.New(client, nil)
	if err != nil {
		panic(err)
	}
	defer locker.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewLockCollector("main", locker))

	ctx := context.Background()
	lk, err := locker.TryObtain(ctx, "invoice:7", time.Minute)
	if err != nil {
		panic(err)
	}
	_, err = locker.TryObtain(ctx, "invoice:7", time.Minute) // held: not obtained
	fmt.Println(err != nil)
	_ = lk.Release(ctx)
	printCounters(reg, "asidekit_lock_obtained_total")
	printCounters(reg, "asidekit_lock_not_obtained_total")
	// Output:
	// true
	// asidekit_lock_obtained_total{locker="main"} 1
	// asidekit_lock_not_obtained_total{locker="main"} 1
}
