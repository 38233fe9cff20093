// Package httplimit puts a guard/limit Limiter in front of a net/http
// handler: the glue every HTTP service otherwise writes by hand.
//
//	lim, _ := limit.NewTokenBucket(rdb, limit.TokenBucket{Rate: limit.PerSecond(10), Burst: 20}, nil)
//	mw, _ := httplimit.New(lim, &httplimit.Options{Window: 2 * time.Second})
//	http.ListenAndServe(addr, mw.Handler(mux))
//
// Each request is counted under a key (Options.Key; by default the
// client's IP address, see ClientIP). An allowed request reaches the
// handler; a refused one gets 429 Too Many Requests with Retry-After. Both
// carry the RateLimit-Policy and RateLimit header fields of the IETF draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers):
//
//	RateLimit-Policy: "default";q=20;w=2
//	RateLimit: "default";r=19;t=1
//
// q is the limiter's Result.Limit, w the Options.Window in seconds (left
// out when zero), r the calls remaining, t the seconds (rounded up) until
// a refused call could pass, or until the key is back to its full quota
// for an allowed one.
//
// The middleware answers what the limiter decides. When the limiter fails
// (Redis down) the request gets the status StatusOf maps the error to,
// 503 Service Unavailable with Retry-After, without reaching the handler;
// a limiter made with limit.Options.FailOpen lets it through instead, and
// one with limit.Options.LocalFallback (the default of asidekit's
// Kit.LimitOptions) decides in the process: the request is served, or
// refused with 429 when its key is over the process's share. Either way the answer
// is quick: the limiter bounds each Redis call (limit.Options.Timeout),
// and after a few consecutive failures its breaker answers every request
// at once, without asking Redis, until a probe finds Redis back
// (Retry-After is then the time until that probe, at least 1 s). StatusOf also maps the errors of the limit package for
// handlers that call a limiter themselves.
package httplimit
