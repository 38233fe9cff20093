package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/guard/limit/httplimit"
	"github.com/asidekit/asidekit/testcontainers"
)

func Example() {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()

	// Two requests per client IP, then one every 30 seconds.
	ns := "example" + strconv.FormatInt(time.Now().UnixNano(), 36)
	lim, err := limit.NewTokenBucket(rdb, limit.TokenBucket{Rate: limit.PerMinute(2)}, &limit.Options{Namespace: ns})
	if err != nil {
		panic(err)
	}
	mw, err := httplimit.New(lim, &httplimit.Options{Window: time.Minute})
	if err != nil {
		panic(err)
	}
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello")
	}))

	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "192.0.2.1:4321"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"), rec.Header().Get("Retry-After") != "")
	}
	_ = lim.Reset(context.Background(), "192.0.2.1")
	// Output:
	// 200 "default";q=2;w=60 false
	// 200 "default";q=2;w=60 false
	// 429 "default";q=2;w=60 true
}
