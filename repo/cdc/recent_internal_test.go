package cdc

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/asidekit/asidekit/internal/rowchange"
)

// recentTable is a registered table for recentRows' tests: it is never
// called.
type recentTable struct{ table }

func recentRelation() *relation {
	return &relation{name: "public.t", cols: []string{"id", "email", "name"}, types: []uint32{20, 25, 25},
		key: []bool{true, false, false}, target: recentTable{}, identity: 'd',
		keyCols: map[string]bool{"id": true, "email": true}}
}

func recentRow(id, email string) rowchange.Row {
	return rowchange.Row{{Name: "id", Type: 20, Text: []byte(id)}, {Name: "email", Type: 25, Text: []byte(email)},
		{Name: "name", Type: 25, Text: []byte("n")}}
}

// checkCount fails t unless m counts the rows its maps hold, within its
// limit.
func checkCount(t *testing.T, m *recentRows, when string) {
	t.Helper()
	held := 0
	for _, rows := range m.rels {
		held += len(rows)
	}
	if held != m.n || m.n > m.limit {
		t.Fatalf("%s: %d rows held, %d counted, limit %d", when, held, m.n, m.limit)
	}
}

// The count of remembered rows is the rows held, within the limit, when
// the first row of a table comes with the limit reached (the eviction
// must not drop that table's new, empty map: Go picks the map it starts
// at at random, so this is tried many times).
func TestRecentRows_countWithinLimit(t *testing.T) {
	t1, t2 := recentRelation(), recentRelation()
	for try := range 100 {
		m := recentRows{limit: 2}
		for i, r := range []*relation{t1, t1, t2, t2, t1} {
			rel := uint32(1)
			if r == t2 {
				rel = 2
			}
			ch := rowchange.Change{Kind: rowchange.Insert, New: recentRow(fmt.Sprint(i), fmt.Sprint("e", i))}
			m.use(rel, r, &ch)
			checkCount(t, &m, fmt.Sprintf("try %d, insert %d", try, i))
		}
		m.forget(2)
		checkCount(t, &m, fmt.Sprintf("try %d, table 2 forgotten", try))
	}
}

// An UPDATE without its old row, and one whose old row is its key alone
// (the key changed), get the row remembered; a DELETE forgets it.
func TestRecentRows_oldRows(t *testing.T) {
	r := recentRelation()
	m := recentRows{limit: 10}
	email := func(row rowchange.Row) string {
		c, ok := row.Lookup("email")
		if !ok {
			return "?"
		}
		return string(c.Text)
	}
	m.use(1, r, &rowchange.Change{Kind: rowchange.Insert, New: recentRow("1", "a")})
	up := rowchange.Change{Kind: rowchange.Update, New: recentRow("1", "b")}
	m.use(1, r, &up)
	if email(up.Old) != "a" {
		t.Fatalf("UPDATE without its old row: Old email %q, want a", email(up.Old))
	}
	move := rowchange.Change{Kind: rowchange.Update, Old: rowchange.Row{{Name: "id", Type: 20, Text: []byte("1")}}, New: recentRow("2", "b")}
	m.use(1, r, &move)
	if email(move.Old) != "b" {
		t.Fatalf("UPDATE of the key: Old email %q, want b (the row after the last change)", email(move.Old))
	}
	del := rowchange.Change{Kind: rowchange.Delete, Old: rowchange.Row{{Name: "id", Type: 20, Text: []byte("2")}}}
	m.use(1, r, &del)
	again := rowchange.Change{Kind: rowchange.Update, New: recentRow("2", "c")}
	m.use(1, r, &again)
	if again.Old != nil {
		t.Fatalf("UPDATE after the DELETE of its key: Old %v, want none", again.Old)
	}
	checkCount(t, &m, "end")
}

// BenchmarkRecentRows_memory reports the heap that remembering a row of
// a table keyed by an id and an email takes (bytes/row: the figure
// Options.RecentRows documents), remembering 100,000 rows an iteration.
//
//	go test -run '^$' -bench RecentRows_memory ./repo/cdc/
func BenchmarkRecentRows_memory(b *testing.B) {
	const rows = 100_000
	r := recentRelation()
	var ms runtime.MemStats
	var total uint64
	for range b.N {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		m := recentRows{limit: rows}
		for i := range rows {
			id := strconv.Itoa(1_000_000 + i)
			m.use(1, r, &rowchange.Change{Kind: rowchange.Insert, New: recentRow(id, "user"+id+"@example.com")})
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		total += ms.HeapAlloc - before
		runtime.KeepAlive(&m)
	}
	b.ReportMetric(float64(total)/float64(b.N*rows), "bytes/row")
}
