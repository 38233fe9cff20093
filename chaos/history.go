package chaos

import (
	"sync"
	"time"
)

// Kind names what an operation did.
type Kind string

// Operation kinds.
const (
	OpGet     Kind = "get"
	OpGetMany Kind = "getmany"
	OpGetBy   Kind = "getby" // Get by the unique slug
	OpCreate  Kind = "create"
	OpUpdate  Kind = "update"
	OpPut     Kind = "put"
	OpDelete  Kind = "delete"
	OpHold    Kind = "hold"  // one lock acquisition, from Obtain to Release
	OpFenced  Kind = "fence" // one write under a lock's fence
	OpSerial  Kind = "serial"
	OpAllow   Kind = "allow"
)

// Applied says whether a write took effect.
type Applied int8

const (
	// No: the write certainly did not happen (nothing to update, a
	// duplicate key, a rejected fence).
	No Applied = iota
	// Yes: the write returned nil.
	Yes
	// Maybe: the write returned an error after it may have reached the
	// server; it binds no read, and may be seen.
	Maybe
	// Committed: the database has the write but the cache upkeep after it
	// failed (repo.ErrAfterCommit); cacheaside retries the invalidation in
	// the background. It binds no read, may be seen, and the cache must
	// converge to it.
	Committed
)

// Absent is the version a read records for a row it did not find.
const Absent int64 = -1

// Op is one recorded operation. Times are offsets on the run's monotonic
// clock.
type Op struct {
	ID    int           `json:"id"`
	Proc  int           `json:"proc"`
	Kind  Kind          `json:"kind"`
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	// Keys are the rows read or written (one, except for GetMany).
	Keys []int64 `json:"keys,omitempty"`
	// Versions are the versions read, aligned with Keys (Absent for a
	// row not found), or the one version written.
	Versions []int64 `json:"versions,omitempty"`
	// Value is the fence of a hold or fenced write, the counter of a
	// serial, 1 for an allowed call.
	Value int64 `json:"value,omitempty"`
	// Token is the lock token of a hold or fenced write, the serial.
	Token string `json:"token,omitempty"`
	// Sort are the order values a write of the CDC phase left the row
	// with, one per query: its time (Unix microseconds) and its rank.
	Sort []int64 `json:"sort,omitempty"`
	// Until is the end of a hold's validity (its refresh's start + ttl).
	Until   time.Duration `json:"until,omitempty"`
	Applied Applied       `json:"applied,omitempty"`
	Err     string        `json:"err,omitempty"`
	ErrKind string        `json:"err_kind,omitempty"`
}

// clock is the run's one time base: offsets from its start, read from the
// monotonic clock, so that every start and end is comparable.
type clock struct{ t0 time.Time }

func newClock() clock                        { return clock{t0: time.Now()} }
func (c clock) now() time.Duration           { return time.Since(c.t0) }
func (c clock) at(d time.Duration) time.Time { return c.t0.Add(d) }

// history collects operations from every goroutine.
type history struct {
	mu  sync.Mutex // guards ops
	ops []Op
}

// add records op, numbering it and stamping its error's kind.
func (h *history) add(op Op, err error) {
	if err != nil {
		op.Err = err.Error()
		op.ErrKind = errKind(err)
	}
	h.mu.Lock()
	op.ID = len(h.ops)
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// len returns how many operations were recorded so far.
func (h *history) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// all returns the operations recorded so far.
func (h *history) all() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}
