// Command catalog is a small product-catalogue HTTP service built the way
// asidekit is meant to be used, end to end:
//
//   - products in a repo.Repository with string ids and a unique slug,
//     read through the cache with the Mutex strategy (one load per key
//     across instances), a Bloom filter over ids and slugs (unknown ones
//     cost no SQL), seeded with CreateMany;
//   - orders numbered by a seqgen.Generator (ORD2026113000001);
//   - a per-client-IP token bucket in front of every route (httplimit:
//     429 with Retry-After and the RateLimit headers);
//   - Prometheus metrics of the cache, the filters, the limiter and the
//     generator on /metrics.
//
// It runs with no server at all, on in-process miniredis and SQLite, from
// the repository root (its go.work names this module) or from here:
//
//	go run ./examples/catalog         (serves on 127.0.0.1:8080 until Ctrl-C)
//	go run ./examples/catalog -demo   (sends a few requests, prints, exits)
//
// and on real servers with -redis 127.0.0.1:6379 -postgres 'postgres://…'.
// While it serves:
//
//	curl localhost:8080/products/p1
//	curl localhost:8080/products/by-slug/product-1
//	curl -X PUT localhost:8080/products/p1 -d '{"slug":"product-1","name":"Lamp","price_cents":2500}'
//	curl -X POST localhost:8080/orders -d '{"product_id":"p1","quantity":2}'
//	curl localhost:8080/metrics
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"
)

func main() {
	var cfg Config
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	flag.StringVar(&cfg.RedisAddr, "redis", "", "Redis address; empty: an in-process miniredis")
	flag.StringVar(&cfg.PostgresDSN, "postgres", "", "PostgreSQL DSN; empty: SQLite in a temporary file")
	flag.StringVar(&cfg.Namespace, "namespace", "catalog", "namespace of every Redis key")
	flag.IntVar(&cfg.Seed, "seed", 1000, "products to create at start (p1…pN), if the table is empty")
	flag.IntVar(&cfg.PerIPRate, "rate", 20, "requests per second per client IP (token bucket refill)")
	flag.IntVar(&cfg.PerIPBurst, "burst", 40, "requests a client IP may send at once")
	demoRun := flag.Bool("demo", false, "send a few requests to the service, print the replies and exit, instead of serving")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	run := serve
	if *demoRun {
		run = func(ctx context.Context, cfg Config) error { return demo(ctx, cfg, os.Stdout) }
	}
	if err := run(ctx, cfg); err != nil {
		log.Fatal("catalog: ", err)
	}
}

// serve runs the service until ctx ends.
func serve(ctx context.Context, cfg Config) error {
	svc, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.Close()
	// Readiness, as docs/outages.md shows: reads are served from the first request
	// on, but while a recovery gate holds them (a repo/cdc Invalidator
	// catching up at start, or after a Redis failure) they go to the
	// database. Wait, bounded, until they use the cache; the catalog runs
	// no Invalidator, so this returns at once.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = svc.cache.WaitRecovered(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("cache not ready: %w", err)
	}
	srv := &http.Server{Addr: cfg.Addr, Handler: svc.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Printf("catalog: listening on http://%s (%s); try /products/p1, /metrics\n", cfg.Addr, svc.Backend())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
