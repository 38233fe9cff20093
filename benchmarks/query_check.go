package benchmarks

import (
	"context"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// qEvent is one completed write of a row: it ran in [start, end] and left
// the row in category cat (0: no row).
type qEvent struct {
	start, end time.Time
	cat        int64
}

// qRead is one read of page 1 of category cat, in [start, end]: the ids
// in the order returned; more when the page was not the whole list.
type qRead struct {
	cat        int64
	start, end time.Time
	ids        []int64
	more       bool
}

// qHistory judges list reads against the writes. hist holds each row's
// writes in order (one writer per row, so they do not overlap); initial
// gives a row's category before any write (0: no row); members[c] holds
// every row ever in checked category c.
type qHistory struct {
	hist    map[int64][]qEvent
	initial func(id int64) int64
	members map[int64]map[int64]bool
	lag     time.Duration // a write counts as completed lag after it ended
}

func newQHistory(hist map[int64][]qEvent, initial func(int64) int64, initialMembers map[int64][]int64, lag time.Duration) *qHistory {
	h := &qHistory{hist: hist, initial: initial, members: map[int64]map[int64]bool{}, lag: lag}
	for c, ids := range initialMembers {
		h.members[c] = map[int64]bool{}
		for _, id := range ids {
			h.members[c][id] = true
		}
	}
	for id, evs := range hist {
		for _, e := range evs {
			if m := h.members[e.cat]; m != nil {
				m[id] = true
			}
		}
	}
	return h
}

// allowed reports whether the row id may be in category c for a read in
// [rs, re] (may), and whether it must be (must): the state after the last
// write completed before rs, or after any write concurrent with the read.
func (h *qHistory) allowed(id, c int64, rs, re time.Time) (may, must bool) {
	prev := h.initial(id)
	states := []int64{}
	for _, e := range h.hist[id] {
		done := e.end.Add(h.lag)
		switch {
		case done.Before(rs):
			prev = e.cat
		case !e.start.After(re):
			states = append(states, e.cat)
		}
	}
	states = append(states, prev)
	must = true
	for _, s := range states {
		if s == c {
			may = true
		} else {
			must = false
		}
	}
	return may, must
}

// stale reports whether r misses a write: ids out of order, a row
// present that may not be, or one absent that must be. Reads of a page
// that was not the whole list are not judged (checked false).
func (h *qHistory) stale(r qRead) (stale, checked bool) {
	m := h.members[r.cat]
	if m == nil || r.more {
		return false, false
	}
	got := make(map[int64]bool, len(r.ids))
	for i, id := range r.ids {
		if i > 0 && r.ids[i-1] >= id {
			return true, true
		}
		got[id] = true
		if may, _ := h.allowed(id, r.cat, r.start, r.end); !may {
			return true, true
		}
	}
	for id := range m {
		if got[id] {
			continue
		}
		if _, must := h.allowed(id, r.cat, r.start, r.end); must {
			return true, true
		}
	}
	return false, true
}

// listReadKey marks a context whose SQL statements count as a list
// read's: its value is the *atomic.Int64 to add them to.
type listReadKey struct{}

const cbListReads = "asidebench:list_reads"

// registerListCounter installs, once per DB, the callback counting the
// statements of contexts made by withListCounter.
func registerListCounter(db *gorm.DB) error {
	cb := db.Callback()
	if cb.Query().Get(cbListReads) != nil {
		return nil
	}
	count := func(tx *gorm.DB) {
		if tx.Statement.Context == nil || tx.DryRun {
			return
		}
		if n, ok := tx.Statement.Context.Value(listReadKey{}).(*atomic.Int64); ok {
			n.Add(1)
		}
	}
	for _, err := range []error{
		cb.Query().Before("gorm:query").Register(cbListReads, count),
		cb.Row().Before("gorm:row").Register(cbListReads, count),
		cb.Raw().Before("gorm:raw").Register(cbListReads, count),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// withListCounter returns ctx whose statements add to n.
func withListCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, listReadKey{}, n)
}
