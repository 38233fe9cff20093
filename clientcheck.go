package asidekit

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/topology"
)

// RecommendedTimeout is the largest client read or write timeout that
// keeps a stalled Redis from stalling a request: asidekit's packages
// bound their own calls (cacheaside's breaker, guard/limit's Timeout,
// seqgen's RedisTimeout, a Kit's node guard and its CallTimeout), but a client that waits longer than this on a
// socket still holds a connection and, without ContextTimeoutEnabled,
// makes the limiter and seqgen run each call on a goroutine of its own.
//
// The client settings that fit:
//
//	redis.NewClient(&redis.Options{
//		Addr:                  addr,
//		DialTimeout:           250 * time.Millisecond,
//		ReadTimeout:           250 * time.Millisecond,
//		WriteTimeout:          250 * time.Millisecond,
//		ContextTimeoutEnabled: true, // a call ends at its context's deadline
//		MinIdleConns:          4,    // no dial on the first requests after a restart
//	})
const RecommendedTimeout = 250 * time.Millisecond

// clientAdvice returns what is wrong with client's timeouts for a service
// (nil when nothing, or when the client's options cannot be read).
func clientAdvice(client redis.UniversalClient) []any {
	to, ok := topology.Of(client).Timeouts()
	if !ok {
		return nil
	}
	read, write, dial, ctxTimeout := to.Read, to.Write, to.Dial, to.ContextTimeoutEnabled
	// go-redis's zero values mean its defaults: 3 s to read and write, 5 s
	// to dial.
	if read == 0 {
		read = 3 * time.Second
	}
	if write == 0 {
		write = read
	}
	if dial == 0 {
		dial = 5 * time.Second
	}
	if read <= RecommendedTimeout && write <= RecommendedTimeout && dial <= RecommendedTimeout && ctxTimeout {
		return nil
	}
	return []any{"read_timeout", read, "write_timeout", write, "dial_timeout", dial,
		"context_timeout_enabled", ctxTimeout, "recommended", RecommendedTimeout}
}

// warnClient logs, once per Kit, when client's timeouts let a stalled
// Redis stall requests.
func warnClient(client redis.UniversalClient) {
	if attrs := clientAdvice(client); attrs != nil {
		slog.Warn("asidekit: the Redis client's timeouts let a stalled Redis stall requests; see asidekit.RecommendedTimeout", attrs...)
	}
}
