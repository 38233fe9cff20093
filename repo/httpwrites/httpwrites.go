// Package httpwrites carries a client's repository writes to its next
// requests: read-your-writes over read replicas, for net/http services.
//
//	mux := http.NewServeMux() // handlers read and write through repo with r.Context()
//	http.ListenAndServe(addr, httpwrites.New(mux, nil))
//
// A response to a request whose writes recorded a position
// (repo.TrackWrites) sets a cookie holding it; a request that brings the
// cookie back reads through repo.ReadAfter, so that its loads run on a
// replica only once it has replayed those writes, else on the primary.
// A service whose repositories have no replicas records no position and
// sets no cookie. The cookie is not a secret: a forged or stale value
// costs at most loads on the primary (a position no replica has reached)
// or nothing (one every replica has passed), never a wrong read; one that
// does not parse is ignored.
//
// The position is set with the response's header, so writes made after
// the handler began writing its body are not reported. Writes of the
// repository itself need no cookie for the ids they invalidate (their
// invalidation carries the position); it matters for what they do not
// key: rows written with plain GORM in a repo.Transaction, lists, other
// services' reads of the same rows.
package httpwrites

import (
	"net/http"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/repo"
)

// DefaultCookie is the cookie's name by default.
const DefaultCookie = "asidekit_lsn"

// Options configure New. A nil *Options means the defaults.
type Options struct {
	// Cookie names the cookie that carries the position. Default
	// DefaultCookie.
	Cookie string
	// Header, when not empty, names a request header read as well as the
	// cookie (for clients without cookies; the larger position wins) and
	// a response header set with it. Default "": the cookie only.
	Header string
	// MaxAge is the cookie's lifetime: make it longer than the replicas'
	// worst lag. Default 5 minutes.
	MaxAge time.Duration
	// Secure sets the cookie's Secure attribute (HTTPS only). Default
	// false.
	Secure bool
}

// New returns next wrapped: every request's context reads after the
// position the client brought (repo.ReadAfter) and records the positions
// of its writes (repo.TrackWrites), which the response hands back. It is
// safe for concurrent use.
func New(next http.Handler, opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Cookie == "" {
		o.Cookie = DefaultCookie
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 5 * time.Minute
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := o.position(r)
		ctx, tok := repo.TrackWrites(repo.ReadAfter(r.Context(), seen))
		rw := &writer{ResponseWriter: w, o: &o, seen: seen, tok: tok}
		next.ServeHTTP(rw, r.WithContext(ctx))
		rw.report() // a handler that wrote nothing: net/http sends the header after this
	})
}

// position returns the highest position r brings, 0 for none.
func (o *Options) position(r *http.Request) uint64 {
	var lsn uint64
	if c, err := r.Cookie(o.Cookie); err == nil {
		lsn = parse(c.Value)
	}
	if o.Header != "" {
		lsn = max(lsn, parse(r.Header.Get(o.Header)))
	}
	return lsn
}

func parse(s string) uint64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// writer sets the position in the response's header before the header
// is sent.
type writer struct {
	http.ResponseWriter
	o        *Options
	seen     uint64 // the request's own position
	tok      *repo.WriteToken
	reported bool
}

// report sets the cookie (and header) once, when the request's writes
// recorded a position beyond the one it brought.
func (w *writer) report() {
	if w.reported {
		return
	}
	w.reported = true
	lsn := w.tok.LSN()
	if lsn <= w.seen {
		return
	}
	v := strconv.FormatUint(lsn, 10)
	http.SetCookie(w.ResponseWriter, &http.Cookie{Name: w.o.Cookie, Value: v, Path: "/",
		MaxAge: int(w.o.MaxAge / time.Second), HttpOnly: true, Secure: w.o.Secure, SameSite: http.SameSiteLaxMode})
	if w.o.Header != "" {
		w.Header().Set(w.o.Header, v)
	}
}

func (w *writer) WriteHeader(code int) {
	if code >= 200 { // not an informational header (103 Early Hints)
		w.report()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(b []byte) (int, error) {
	w.report()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer
// (Flush, deadlines).
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
