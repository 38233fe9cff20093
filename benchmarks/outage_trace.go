package benchmarks

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Metrics of the outage scenario's checker: MetricStaleLocal counts the
// reads (before or after the restore) older only than another process's
// write returned less than outageLocalWindow before them, the near
// cache's propagation delay (README, Near cache), counted apart from
// MetricStaleDuring and MetricStaleAfterRestore; MetricStaleLocalMax is
// the oldest's age.
const (
	MetricStaleLocal    = "stale_local_propagation"
	MetricStaleLocalMax = "stale_local_propagation_max_ms"
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
const outageTraceMax = 12

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

// outageLocalWindow bounds the near cache's propagation delay the
// checker allows: a process's near cache learns of another process's
// write when Redis's invalidation reaches it, a few ms after the write
// returned (README, Near cache: "Other processes see the write after the
// propagation delay"; local_invalidation measured at most 10.8 ms on an
// idle machine). 50 ms leaves room for a loaded one.
const outageLocalWindow = 50 * time.Millisecond

// propagation reports whether a read of id by process proc, begun at
// begin (UnixNano) and returning version got, was stale only by the near
// cache's propagation delay: every write newer than got that returned
// before the read began is a repository write of another process that
// returned nil (its invalidation applied in Redis, so the reader's near
// cache learns of it from Redis) less than outageLocalWindow before the
// read began. A plain-SQL write, an ErrAfterCommit write (its
// invalidation failed: nothing reaches the other near caches until the
// retry or repo/cdc applies it), the reader's own write (its near cache
// entry is dropped before the write returns) or an older one is not. It
// also returns the age of the read: from the return of the first such
// write to the read's beginning.
func (l *outageLog) propagation(id int64, proc int, begin, got int64) (ok bool, age time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := int64(0)
	for _, w := range l.writes[id] {
		if w.ver <= got || w.done >= begin {
			continue
		}
		if w.proc < 0 || w.proc == proc || w.afterCommit || time.Duration(begin-w.done) >= outageLocalWindow {
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
