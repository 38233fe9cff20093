package httplimit

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/asidekit/asidekit/guard/limit"
)

// KeyFunc returns the key a request is counted under. An error is answered
// with the status StatusOf maps it to (400 for one wrapping
// limit.ErrInvalid), without reaching the handler.
type KeyFunc func(r *http.Request) (string, error)

// ClientIP is the default KeyFunc: the IP address of the connection's
// peer (Request.RemoteAddr). An IPv6 address is reduced to its /64
// prefix, the block one subscriber usually gets, so that a client cannot
// escape the limit by walking through its own addresses. Behind a reverse
// proxy every request comes from the proxy: use ForwardedFor.
func ClientIP(r *http.Request) (string, error) {
	return ipKey(r.RemoteAddr)
}

// ForwardedFor returns a KeyFunc for a service behind trustedProxies
// reverse proxies that each append the address they received the request
// from to X-Forwarded-For: the client is the address trustedProxies
// places from the end of the header (the proxies' own additions). Fewer
// addresses than that, or a malformed one, fall back to ClientIP, which
// then is the nearest proxy. Addresses a client writes itself come before
// the proxies' and are never used. trustedProxies must be at least 1.
func ForwardedFor(trustedProxies int) KeyFunc {
	if trustedProxies < 1 {
		panic("httplimit: ForwardedFor needs at least one trusted proxy")
	}
	return func(r *http.Request) (string, error) {
		var hops []string
		for _, h := range r.Header.Values("X-Forwarded-For") {
			for _, a := range strings.Split(h, ",") {
				hops = append(hops, strings.TrimSpace(a))
			}
		}
		if i := len(hops) - trustedProxies; i >= 0 {
			if k, err := ipKey(hops[i]); err == nil {
				return k, nil
			}
		}
		return ClientIP(r)
	}
}

// ipKey parses "ip", "ip:port" or "[ip]:port" into a key: the address, or
// its /64 prefix for IPv6.
func ipKey(s string) (string, error) {
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return "", fmt.Errorf("%w: client address %q: %v", limit.ErrInvalid, s, err)
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String(), nil
	}
	return addr.String(), nil
}
