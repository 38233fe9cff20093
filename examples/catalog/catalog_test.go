package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The service on its embedded backends, driven over HTTP: reads by id and
// by slug, a PUT read back at once (no stale cache), an order numbered by
// seqgen, the per-IP limit, and the metrics of every part.
func TestCatalog_embedded(t *testing.T) {
	ctx := context.Background()
	svc, err := Open(ctx, Config{Namespace: "catalogtest", Seed: 100, PerIPRate: 1, PerIPPeriod: time.Hour, PerIPBurst: 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)

	call := func(method, path, body string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	decode := func(s string) Product {
		t.Helper()
		var p Product
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			t.Fatalf("%v: %q", err, s)
		}
		return p
	}

	code, body, h := call("GET", "/products/p7", "")
	if p := decode(body); code != 200 || p.Slug != "product-7" {
		t.Fatalf("GET /products/p7 = %d %q", code, body)
	}
	if h.Get("RateLimit-Policy") != `"default";q=30` || !strings.HasPrefix(h.Get("RateLimit"), `"default";r=29;`) {
		t.Fatalf("rate-limit headers %q, %q", h.Get("RateLimit-Policy"), h.Get("RateLimit"))
	}
	if code, body, _ := call("GET", "/products/by-slug/product-42", ""); code != 200 || decode(body).ID != "p42" {
		t.Fatalf("GET by slug = %d %q", code, body)
	}
	for _, path := range []string{"/products/p100000", "/products/by-slug/no-such-slug"} {
		if code, _, _ := call("GET", path, ""); code != 404 {
			t.Fatalf("GET %s = %d, want 404", path, code)
		}
	}

	// A PUT is read back at once, by id and by its new slug; the old slug
	// is gone.
	code, body, _ = call("PUT", "/products/p7", `{"slug":"lamp","name":"Lamp","price_cents":2500}`)
	if code != 200 {
		t.Fatalf("PUT = %d %q", code, body)
	}
	if code, body, _ := call("GET", "/products/p7", ""); code != 200 || decode(body).PriceCents != 2500 {
		t.Fatalf("GET after PUT = %d %q", code, body)
	}
	if code, body, _ := call("GET", "/products/by-slug/lamp", ""); code != 200 || decode(body).ID != "p7" {
		t.Fatalf("GET by the new slug = %d %q", code, body)
	}
	if code, _, _ := call("GET", "/products/by-slug/product-7", ""); code != 404 {
		t.Fatalf("GET by the old slug = %d, want 404", code)
	}
	// Another product taking the slug is a conflict.
	if code, body, _ := call("PUT", "/products/p8", `{"slug":"lamp","name":"Copy","price_cents":1}`); code != 409 {
		t.Fatalf("PUT of a taken slug = %d %q, want 409", code, body)
	}

	// Orders get consecutive serials.
	var serials []string
	for range 2 {
		code, body, _ := call("POST", "/orders", `{"product_id":"p1","quantity":2}`)
		var o Order
		if code != 201 || json.Unmarshal([]byte(body), &o) != nil || !strings.HasPrefix(o.Serial, "ORD") {
			t.Fatalf("POST /orders = %d %q", code, body)
		}
		serials = append(serials, o.Serial)
	}
	if serials[0] >= serials[1] || len(serials[0]) != len("ORD2026113000001") {
		t.Fatalf("serials %v", serials)
	}
	if code, _, _ := call("POST", "/orders", `{"product_id":"p100000","quantity":1}`); code != 404 {
		t.Fatalf("order of an unknown product = %d, want 404", code)
	}

	// The burst of 30 is spent (about 14 calls above): the rest are 429
	// (one token an hour: however slow the machine, none comes back).
	limited := 0
	for range 30 {
		code, _, h := call("GET", "/products/p1", "")
		if code == http.StatusTooManyRequests {
			limited++
			if h.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
	}
	if limited == 0 {
		t.Fatal("45 requests against a burst of 30 at 1/h: none refused")
	}

	// /metrics is not limited and shows every part.
	code, body, _ = call("GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("GET /metrics = %d", code)
	}
	for _, want := range []string{
		`asidekit_cache_events_total{entity="products",event="hit"}`,
		`asidekit_bloom_fill_ratio{filter="products.by.slug"}`,
		fmt.Sprintf(`asidekit_limit_calls_total{limiter="per-ip",outcome="refused"} %d`, limited),
		`asidekit_seqgen_segments_reserved_total{generator="orders"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// -demo sends its requests and prints every reply, then returns.
func TestCatalog_demo(t *testing.T) {
	var out strings.Builder
	if err := demo(context.Background(), Config{Namespace: "catalogdemo", Seed: 100, PerIPRate: 10, PerIPBurst: 40}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"GET /products/p7 -> 200",
		"GET /products/p999999 -> 404",
		"GET /products/by-slug/lamp -> 200",
		"POST /orders -> 201",
		`"serial":"ORD`,
		`asidekit_cache_events_total{entity="products",event="hit"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("demo output lacks %q:\n%s", want, got)
		}
	}
}
