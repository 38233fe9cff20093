package faultproxy

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// NewPostgres starts a proxy in front of the PostgreSQL server of dsn, a
// URL (postgres://user@host:port/db?…) over TCP, and returns it with dsn
// pointed at it. A key=value DSN, or one without a host (a Unix socket), is
// an error.
func NewPostgres(dsn string) (*Proxy, string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Hostname() == "" || strings.HasPrefix(u.Hostname(), "/") {
		return nil, "", errors.New("faultproxy: the DSN is not a PostgreSQL URL over TCP")
	}
	upstream := u.Host
	if u.Port() == "" {
		upstream = net.JoinHostPort(u.Hostname(), "5432")
	}
	p, err := New(upstream)
	if err != nil {
		return nil, "", err
	}
	u.Host = p.Addr()
	return p, u.String(), nil
}
