package benchmarks

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Metrics of the outage scenario's checker: MetricStaleLocal counts the
// reads (before or after the restore) older only than other processes'
// writes returned less than MetricStaleLocalWindow before them, the near
// cache's propagation delay (docs/near-cache.md), counted apart from
// MetricStaleDuring and MetricStaleAfterRestore; MetricStaleLocalMax is
// the oldest's age (see outageLocalWindow).
const (
	MetricStaleLocal       = "stale_local_propagation"
	MetricStaleLocalMax    = "stale_local_propagation_max_ms"
	MetricStaleLocalWindow = "stale_local_window_ms"
)

// outageWrite is one write of the outage scenario's row: the version it
// made, when it returned (UnixNano), and who made it.
type outageWrite struct {
	ver         int64
	done        int64
	proc        int  // the process of a repository write; -1 for plain SQL
	afterCommit bool // a repository write that returned ErrAfterCommit
}

// outageStale is one stale read: which process read which id, when, what
// it got and what it should have got at least, and whether the process's
// recovery gate held its reads at the read's beginning and end.
type outageStale struct {
	id, got, acked, oob int64
	proc                int
	begin, end          int64 // UnixNano
	after               bool  // began after the restore
	gateBegin, gateEnd  bool  // Recovering() at begin and end
	// local: older only than other processes' writes that returned nil,
	// age ago (see propagation); not yet counted, settle judges it.
	local bool
	age   time.Duration
}

// outageLog keeps every write and every stale read of a run, to say
// which write a stale read missed (the scenario's notes).
type outageLog struct {
	mu     sync.Mutex
	writes map[int64][]outageWrite // by id, in the order recorded
	stale  []outageStale
}

func (l *outageLog) wrote(id int64, w outageWrite) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writes == nil {
		l.writes = make(map[int64][]outageWrite)
	}
	l.writes[id] = append(l.writes[id], w)
}

func (l *outageLog) staleRead(s outageStale) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stale = append(l.stale, s)
}

// outageTraceMax caps the stale reads described in a row's notes.
const outageTraceMax = 6

// describe returns one line per stale read (at most outageTraceMax),
// times in ms from the restore (negative: before it; restore 0: from the
// fault), naming the writes of versions newer than the one read that had
// returned before the read began.
func (l *outageLog) describe(fault, restore int64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ref := restore
	if ref == 0 {
		ref = fault
	}
	ms := func(t int64) string { return fmt.Sprintf("%+.1f", float64(t-ref)/float64(time.Millisecond)) }
	var out []string
	for i, s := range l.stale {
		if i == outageTraceMax {
			out = append(out, fmt.Sprintf("… %d more", len(l.stale)-i))
			break
		}
		var missed []string
		ws := slices.Clone(l.writes[s.id])
		slices.SortFunc(ws, func(a, b outageWrite) int { return int(a.ver - b.ver) })
		for _, w := range ws {
			if w.ver <= s.got || w.done >= s.begin {
				continue
			}
			kind := "sql"
			if w.proc >= 0 {
				kind = fmt.Sprintf("repo p%d", w.proc)
				if w.afterCommit {
					kind += " ErrAfterCommit"
				}
			}
			missed = append(missed, fmt.Sprintf("v%d %s done %s", w.ver, kind, ms(w.done)))
		}
		when := "before"
		if s.after {
			when = "after"
		}
		out = append(out, fmt.Sprintf("stale %s restore: id %d p%d read %s..%s got v%d want ≥ v%d (repo) v%d (sql) gate %t/%t; missed: %s",
			when, s.id, s.proc, ms(s.begin), ms(s.end), s.got, s.acked, s.oob, s.gateBegin, s.gateEnd, strings.Join(missed, ", ")))
	}
	return out
}

// outageLocalFloor is the least propagation delay of the near cache the
// checker allows (see outageLocalWindow): a process's near cache learns
// of another process's write when Redis's invalidation reaches it, a few
// ms after the write returned (docs/near-cache.md: "Other processes see
// the write after the propagation delay"; local_invalidation measured at
// most 10.8 ms on an idle machine).
const outageLocalFloor = 50 * time.Millisecond

// outageLocalWindow is the propagation delay the checker allows in a run:
// outageLocalFloor, or the p99 latency of the requests before the fault
// when that is longer (on a loaded machine, the reader's feed goroutine
// waits to be scheduled as long as a request does).
func outageLocalWindow(p99Before time.Duration) time.Duration {
	return max(outageLocalFloor, p99Before)
}

// propagation reports whether a read of id by process proc, begun at
// begin (UnixNano) and returning version got, may be stale by the near
// cache's propagation delay: every write newer than got that returned
// before the read began is a repository write of another process that
// returned nil (its invalidation applied in Redis, so the reader's near
// cache learns of it from Redis). A plain-SQL write, an ErrAfterCommit
// write (its invalidation failed: nothing reaches the other near caches
// until the retry or repo/cdc applies it) or the reader's own write (its
// near cache entry is dropped before the write returns) is not. It also
// returns the read's age: from the return of the first such write to the
// read's beginning; settle compares it with the run's window.
func (l *outageLog) propagation(id int64, proc int, begin, got int64) (ok bool, age time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := int64(0)
	for _, w := range l.writes[id] {
		if w.ver <= got || w.done >= begin {
			continue
		}
		if w.proc < 0 || w.proc == proc || w.afterCommit {
			return false, 0
		}
		if first == 0 || w.done < first {
			first = w.done
		}
	}
	if first == 0 {
		return false, 0
	}
	return true, time.Duration(begin - first)
}

// outageSettled is what settle decided of the reads propagation allowed.
type outageSettled struct {
	local     int64         // younger than the window: not stale
	localMax  time.Duration // the oldest of those
	before    int64         // older: stale, before the restore
	after     int64         // older: stale, after the restore
	lastAfter time.Duration // restore → the end of the last of those after
}

// settle judges the reads propagation allowed against window: those
// younger are the near cache's propagation delay (dropped from the stale
// reads described), the others are stale.
func (l *outageLog) settle(window time.Duration, restore int64) outageSettled {
	l.mu.Lock()
	defer l.mu.Unlock()
	var st outageSettled
	keep := l.stale[:0]
	for _, s := range l.stale {
		switch {
		case !s.local:
		case s.age < window:
			st.local++
			st.localMax = max(st.localMax, s.age)
			continue
		case s.after:
			st.after++
			st.lastAfter = max(st.lastAfter, time.Duration(s.end-restore))
		default:
			st.before++
		}
		keep = append(keep, s)
	}
	l.stale = keep
	return st
}
