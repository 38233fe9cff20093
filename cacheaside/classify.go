package cacheaside

import (
	"math"
	"math/rand/v2"
	"time"
)

// state is what a read found in an entry, for this entity's Policy.
type state int

const (
	stateAbsent  state = iota // no entry
	stateFresh                // a value within its logical expiry
	stateNull                 // a "not found" within its logical expiry
	stateDue                  // a fresh value that XFetch picked for early refresh (EarlyRefresh)
	stateStale                // a value past its expiry, served while refreshing (AsyncRefresh, within Grace)
	stateExpired              // past its expiry: rebuild (a value is kept to serve within Grace)
	stateCorrupt              // not an entry of this format, or its payload does not decode
)

// view is one classified entry.
type view[T any] struct {
	state  state
	v      T      // the value, for stateFresh, stateDue, stateStale and a value's stateExpired
	expiry int64  // logical expiry, Unix ms
	hdr    string // the entry's header, for stateDue and stateStale: a refresh's observed state
	found  bool   // v holds a decoded value
	size   int    // the entry's length in Redis (a near cache entry's weight)
}

// now returns the time for classify: the Unix ms clock when the Policy
// needs it (Grace, AsyncRefresh, EarlyRefresh), else 0, which counts every
// entry as fresh (its Redis TTL is its logical expiry then).
func (e *Entity[T]) now() int64 {
	if e.clock {
		return time.Now().UnixMilli()
	}
	return 0
}

// classify decodes b (nil: no entry) as read at now (0: an entry is
// fresh, e.g. because a script found it so) and says what it holds for
// this entity's strategy. It is the one place that reads the header: the
// Lua scripts that test freshness read the same bytes (see entry.go).
func (e *Entity[T]) classify(b []byte, now int64) view[T] {
	return e.classifyFetched(fetched[T]{b: b}, now)
}

// classifyFetched is classify of a GET's reply, whose payload may be
// decoded already (see fetched).
func (e *Entity[T]) classifyFetched(f fetched[T], now int64) view[T] {
	b := f.b
	if b == nil {
		return view[T]{state: stateAbsent}
	}
	h, payload, err := decodeEntry(b)
	if err != nil {
		return view[T]{state: stateCorrupt}
	}
	vw := view[T]{expiry: h.expiry, size: len(b)}
	fresh := now == 0 || now < h.expiry
	if h.null {
		vw.state = stateExpired
		if fresh {
			vw.state = stateNull
		}
		return vw
	}
	switch {
	case f.decoded: // by the GET shared with other callers
		vw.v = f.v
	case f.bad:
		return view[T]{state: stateCorrupt}
	default:
		v, ok := e.decode(payload)
		if !ok {
			return view[T]{state: stateCorrupt}
		}
		vw.v = v
	}
	vw.found = true
	switch {
	case fresh && e.p.Strategy == EarlyRefresh && e.xfetch(now, h):
		vw.state = stateDue
	case fresh:
		vw.state = stateFresh
	case e.p.Strategy.servesStale() && now < h.expiry+e.graceM:
		vw.state = stateStale
	default:
		vw.state = stateExpired
	}
	if vw.state == stateDue || vw.state == stateStale {
		vw.hdr = string(b[:headerLen]) // to be refreshed: kept only then
	}
	return vw
}

// stale returns the value a rebuild may serve within Grace if its load
// fails, or nil.
func (vw view[T]) stale() *stale[T] {
	if !vw.found {
		return nil
	}
	return &stale[T]{v: vw.v, expiry: vw.expiry}
}

// current returns the value of an entry that is fresh (due for an early
// refresh or not), or ErrNotFound for a fresh null entry; ok is false for any
// other state.
func (vw view[T]) current() (v T, err error, ok bool) {
	switch vw.state {
	case stateFresh, stateDue:
		return vw.v, nil, true
	case stateNull:
		return v, ErrNotFound, true
	}
	return v, nil, false
}

// maxXFetch bounds −ln(U) for U in (0,1] drawn from a float64: no reader
// can recompute earlier than maxXFetch·Δ·β before the expiry.
const maxXFetch = 38

// xfetch reports whether a reader at now should recompute the entry early:
// now − Δ·β·ln(U) ≥ expiry, U uniform on (0,1].
func (e *Entity[T]) xfetch(now int64, h header) bool {
	delta := float64(h.loadUS) / 1000 * e.p.Beta // ms
	gap := float64(h.expiry - now)
	if now == 0 || delta <= 0 || gap > delta*maxXFetch {
		return false
	}
	return -delta*math.Log(1-rand.Float64()) >= gap
}

// leases reports whether the strategy rebuilds under a Redis lease.
func (s Strategy) leases() bool { return s >= Mutex }

// shares reports whether the strategy shares a key's loads among the
// concurrent callers of a process.
func (s Strategy) shares() bool { return s != None }

// servesStale reports whether the strategy serves values past their
// logical expiry (within Grace) while it refreshes them.
func (s Strategy) servesStale() bool { return s == AsyncRefresh }
