package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/asidekit/asidekit/guard/limit"
)

// Options configure New. A nil *Options means the defaults.
type Options struct {
	// Key returns the key a request is counted under. Default ClientIP.
	Key KeyFunc
	// Policy names the quota policy in the RateLimit-Policy and RateLimit
	// fields: a token of letters, digits and "_-.:/*". Default "default".
	Policy string
	// Window is the policy's time window, the w parameter of
	// RateLimit-Policy in whole seconds (for a token bucket: the time its
	// burst takes to refill). Default 0: no w parameter.
	Window time.Duration
	// OnError writes the response when the key or the limiter fails.
	// Default: the status StatusOf maps err to, with its text as the body.
	// For a limiter error that maps to 503, Retry-After is already set
	// when it is called. It is not called for a limiter with FailOpen (the
	// request is served).
	OnError func(w http.ResponseWriter, r *http.Request, err error)
	// OnLimited writes the body of a refused request, after the status 429
	// and the headers are set. Default: "Too Many Requests".
	OnLimited func(w http.ResponseWriter, r *http.Request, res limit.Result)
}

// Middleware limits the requests of the handlers it wraps. It is safe for
// concurrent use.
type Middleware struct {
	lim       limit.Limiter
	key       KeyFunc
	policy    string
	window    int64 // seconds; 0: none
	onError   func(http.ResponseWriter, *http.Request, error)
	onLimited func(http.ResponseWriter, *http.Request, limit.Result)
}

// New returns a Middleware that asks lim about every request. A nil lim,
// a Policy that is not a token or a negative Window is an error matching
// limit.ErrInvalid.
func New(lim limit.Limiter, opts *Options) (*Middleware, error) {
	if lim == nil {
		return nil, fmt.Errorf("%w: httplimit: nil Limiter", limit.ErrInvalid)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	m := &Middleware{lim: lim, key: o.Key, policy: o.Policy, onError: o.OnError, onLimited: o.OnLimited}
	if m.key == nil {
		m.key = ClientIP
	}
	if m.policy == "" {
		m.policy = "default"
	}
	if !isToken(m.policy) {
		return nil, fmt.Errorf("%w: httplimit: Policy %q is not a token", limit.ErrInvalid, m.policy)
	}
	if o.Window < 0 {
		return nil, fmt.Errorf("%w: httplimit: Window %v", limit.ErrInvalid, o.Window)
	}
	m.window = seconds(o.Window)
	if m.onError == nil {
		m.onError = func(w http.ResponseWriter, _ *http.Request, err error) {
			code := StatusOf(err)
			http.Error(w, http.StatusText(code), code)
		}
	}
	if m.onLimited == nil {
		m.onLimited = func(w http.ResponseWriter, _ *http.Request, _ limit.Result) {
			_, _ = w.Write([]byte(http.StatusText(http.StatusTooManyRequests) + "\n"))
		}
	}
	return m, nil
}

// Handler returns next behind the limiter.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := m.key(r)
		if err != nil {
			m.onError(w, r, err)
			return
		}
		res, err := m.lim.Allow(r.Context(), key)
		switch {
		case res.Allowed && err != nil && errors.Is(err, limit.ErrFailedOpen):
			next.ServeHTTP(w, r) // Redis failed, the limiter lets calls through
			return
		case err != nil:
			if StatusOf(err) == http.StatusServiceUnavailable {
				// Redis failed, or the limiter's breaker is open (then
				// RetryAfter is the time until it probes Redis again).
				w.Header().Set("Retry-After", strconv.FormatInt(max(seconds(res.RetryAfter), 1), 10))
			}
			m.onError(w, r, err)
			return
		}
		m.setHeaders(w.Header(), res)
		if !res.Allowed {
			w.Header().Set("Retry-After", strconv.FormatInt(max(seconds(res.RetryAfter), 1), 10))
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusTooManyRequests)
			m.onLimited(w, r, res)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// setHeaders sets RateLimit-Policy and RateLimit from res.
func (m *Middleware) setHeaders(h http.Header, res limit.Result) {
	policy := strconv.Quote(m.policy) + ";q=" + strconv.Itoa(res.Limit)
	if m.window > 0 {
		policy += ";w=" + strconv.FormatInt(m.window, 10)
	}
	h.Set("RateLimit-Policy", policy)
	t := res.ResetAfter
	if !res.Allowed {
		t = res.RetryAfter
	}
	h.Set("RateLimit", strconv.Quote(m.policy)+";r="+strconv.Itoa(max(res.Remaining, 0))+";t="+strconv.FormatInt(seconds(t), 10))
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// isToken reports whether s can be a policy name (a Structured Field
// string, kept to the characters that need no escaping).
func isToken(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/*") == ""
}
