// Package limit provides rate limiters whose state lives in Redis, so that
// every process of a service shares one limit per key.
//
// Each algorithm is one Lua script (one round trip per call). Scripts read
// the time from Redis TIME, never from the client's clock (clients may
// disagree about the time; a key's state only ever meets the clock of the
// Redis node that holds it; the fixed window's boundaries are its key's
// expiry, on the same server's clock), and keep a key's state under one
// Redis key:
//
//	algorithm      constructor        state                      memory
//	fixed window   NewFixedWindow     counter (string)           O(1)
//	  + lockout    FixedWindow.LockTime
//	sliding log    NewSlidingLog      sorted set of timestamps   O(limit)
//	sliding window NewSlidingWindow   hash: two counters         O(1)
//	GCRA           NewGCRA            theoretical arrival time   O(1)
//	  token bucket NewTokenBucket     (the same limiter as GCRA)
//	funnel         NewFunnel          hash: level and timestamp  O(1)
//	  leaky bucket NewLeakyBucket     (the same limiter as funnel)
//	concurrency    NewConcurrency     sorted set of leases       O(limit)
//
// The first five implement Limiter. TokenBucket and LeakyBucket are the
// names the field gives GCRA and Funnel: aliases of their configurations,
// and constructors that return the same limiters (sharing their keys). The concurrency limiter counts calls in
// flight rather than calls per unit of time, so it hands out leases instead:
// see Semaphore.
//
// # Keys
//
// A limiter for key k keeps its state at "<namespace>:rl:{<algo>:<k>}":
// namespace "ak" by default; algo one of fw (fixed window, with or without
// lockout), sl (sliding log), sw (sliding window), gcra, fun (funnel), cc
// (concurrency); k escaped with the rules of internal/keys, so that any
// string of 1 to 1024 bytes can be a key and none can leave its hash tag.
// Each script touches that one key, so every limiter runs on Redis Cluster. Limiters of the same algorithm,
// namespace and key share their state, whatever their configuration: give
// limiters with different limits different keys or namespaces.
//
// Package httplimit puts a Limiter in front of a net/http handler (client
// IP keys, 429 with Retry-After, the IETF RateLimit header fields).
//
// # Choosing one
//
// FixedWindow is the cheapest and the easiest to explain ("3 logins per
// minute"), with an optional lockout, but lets 2·Limit calls through
// across a window's end. SlidingLog is exact over any interval and costs
// memory per call. SlidingWindow approximates it in O(1). GCRA (token
// bucket) and Funnel (leaky bucket) allow a burst and then a steady rate,
// and their RetryAfter is exact, which suits Wait. Semaphore bounds the
// calls in flight rather than their rate.
//
// # When Redis fails
//
// Allow never lets a call through silently. By default (fail closed) a Redis
// error makes Allow return Allowed=false with the error. With
// Options.FailOpen, Allow returns Allowed=true together with an error that
// wraps both ErrFailedOpen and the Redis error, so the caller can serve the
// request and still log or count the failure. A cancelled or expired context
// and invalid input are never failed open.
//
// Either way a dead Redis costs no timeout per call. Each limiter bounds its
// own Redis calls (Options.Timeout, default 250 ms, whatever the client's
// timeouts and retries; a sooner context deadline wins), and keeps a
// breaker: after Options.BreakerThreshold (default 5) consecutive failures
// (timeouts and connection errors, not errors the server replies) it stops
// asking Redis for Options.BreakerCooldown (default 1 s) and answers every
// call at once by its policy, with an error wrapping ErrBreakerOpen; then one
// call at a time probes Redis, and the first success closes the breaker.
// Stats counts the calls answered so (Bypassed) and the times it opened.
// While the breaker is closed it costs one atomic load per call.
//
// Neither policy limits anything during an outage: fail closed refuses
// every call (behind httplimit, every request gets a 503, although the
// service behind it may be able to serve it), fail open allows every
// call. Options.LocalFallback (the number of processes that share the
// limit) offers a third answer: a limiter whose Redis fails decides in
// the process, with an in-memory token bucket per key at its share of
// the limit and of the rate, and returns that decision with a nil error
// (Stats.LocalFallbacks). The processes do not see each other's calls:
// the fleet allows about the limit while the load is spread evenly
// across them; with a share larger than 1/N (LocalFallback below the
// number of processes) it allows more (at 1, each process alone allows
// as a token bucket of the whole limit: it refuses a client about when
// the shared limit would, had that client come to this process only);
// with a smaller one it refuses sooner.
//
// The trade-off: fail closed protects what the limit guards at the cost
// of an outage of everything behind it; fail open keeps the service up
// with no limit at all; the local fallback keeps it up and still limits
// each key, approximately. Package limit's own default is fail closed
// (nothing is assumed about the fleet). A service built with an
// asidekit.Kit gets the local fallback: Kit.LimitOptions sets
// LocalFallback to the Kit's Config.Processes (default 1: each process
// enforces the whole limit alone, so the fleet allows up to N times it)
// and FailOpen for semaphores, unless the options say otherwise
// (LocalFallback -1 keeps a limiter fail closed).
//
// # Eviction and failover
//
// Limiter state must not be evicted while it matters: an evicted key forgets
// the calls it counted (more calls pass until it fills again) and an evicted
// lease frees a concurrency slot early. Every limiter key carries an expiry,
// so that nothing is left behind; that also makes it a candidate for every
// eviction policy but noeviction, volatile-* included. Keep limiter state on
// a Redis that runs with maxmemory-policy noeviction (a separate one if the
// cache's Redis evicts). After a failover to a replica that missed recent
// writes, the lost calls are forgotten in the same way. Neither can make a
// limiter refuse more than its definition says; both can let more through.
package limit
