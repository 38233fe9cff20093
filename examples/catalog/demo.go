package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// demoCalls are the requests -demo sends, each with what it shows.
var demoCalls = []struct{ method, path, body, note string }{
	{"GET", "/products/p7", "", "a miss, then cached"},
	{"GET", "/products/p7", "", "a hit: no SQL"},
	{"GET", "/products/by-slug/product-42", "", "by the unique slug"},
	{"GET", "/products/p999999", "", "unknown id: the Bloom filter answers, no SQL"},
	{"GET", "/products/by-slug/no-such-slug", "", "unknown slug: the slug filter answers, no SQL"},
	{"PUT", "/products/p7", `{"slug":"lamp","name":"Lamp","price_cents":2500}`, "a write: the database, then invalidation"},
	{"GET", "/products/by-slug/lamp", "", "read back at once by the new slug"},
	{"POST", "/orders", `{"product_id":"p7","quantity":2}`, "an order number from seqgen"},
}

// demo serves the service on a free loopback port just long enough to
// send it demoCalls and print the replies and a few metrics, then returns.
func demo(ctx context.Context, cfg Config, out io.Writer) error {
	svc, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "catalog demo on %s (%s)\n\n", base, svc.Backend())

	call := func(method, path, body string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, strings.TrimSpace(string(b)), err
	}
	for _, c := range demoCalls {
		code, body, err := call(c.method, c.path, c.body)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %s -> %d  (%s)\n    %s\n", c.method, c.path, code, c.note, body)
	}
	_, metrics, err := call("GET", "/metrics", "")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nGET /metrics (excerpt, counters above zero):")
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasSuffix(line, " 0") {
			continue
		}
		if strings.HasPrefix(line, `asidekit_cache_events_total{entity="products",`) ||
			strings.HasPrefix(line, "asidekit_bloom_fill_ratio") ||
			strings.HasPrefix(line, "asidekit_seqgen_segments_reserved_total") {
			fmt.Fprintln(out, "   ", line)
		}
	}
	return nil
}
