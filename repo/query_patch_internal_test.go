package repo

import (
	"slices"
	gosync "sync"
	"testing"
	"time"

	"gorm.io/gorm/schema"
)

func TestPatchWindow(t *testing.T) {
	w := func(more bool, rows ...int64) queryEntry[int64] { // row n at key "0n"
		e := queryEntry[int64]{More: more}
		for _, r := range rows {
			e.IDs = append(e.IDs, r)
			e.K = append(e.K, "0"+string(rune('0'+r)))
		}
		return e
	}
	for _, c := range []struct {
		name      string
		e         queryEntry[int64]
		lower     string
		size      int
		lines     []string
		want      []int64
		more, bad bool
	}{
		{name: "none", e: w(false, 1, 3, 5), size: 10, want: []int64{1, 3, 5}},
		{name: "cut to the page", e: w(false, 1, 3, 5), size: 2, want: []int64{1, 3}, more: true},
		{name: "join", e: w(false, 1, 3, 5), size: 10, lines: []string{"+04 4"}, want: []int64{1, 3, 4, 5}},
		{name: "join at the end", e: w(false, 1, 3), size: 10, lines: []string{"+09 9"}, want: []int64{1, 3, 9}},
		{name: "leave", e: w(false, 1, 3, 5), size: 10, lines: []string{"-3"}, want: []int64{1, 5}},
		{name: "move within", e: w(false, 1, 3, 5), size: 10, lines: []string{"+06 1"}, want: []int64{3, 5, 1}},
		{name: "applied twice", e: w(false, 1, 3, 5), size: 10, lines: []string{"+04 4", "+04 4", "-3", "-3"}, want: []int64{1, 4, 5}},
		{name: "join then leave", e: w(false, 1, 3), size: 10, lines: []string{"+02 2", "-2"}, want: []int64{1, 3}},
		{name: "leave then join", e: w(false, 1, 3), size: 10, lines: []string{"-3", "+03 3"}, want: []int64{1, 3}},
		{name: "the window has it already", e: w(false, 1, 2, 3), size: 10, lines: []string{"+02 2"}, want: []int64{1, 2, 3}},
		{name: "before the cursor", e: w(false, 3, 5), lower: "02", size: 10, lines: []string{"+01 1", "+02 2"}, want: []int64{3, 5}},
		{name: "past a partial window", e: w(true, 1, 3, 5), size: 2, lines: []string{"+07 7"}, want: []int64{1, 3}, more: true},
		{name: "moved past a partial window", e: w(true, 1, 3, 5), size: 2, lines: []string{"+07 1"}, want: []int64{3, 5}, more: true},
		{name: "a partial window exactly a page", e: w(true, 1, 3, 5), size: 3, want: []int64{1, 3, 5}, more: true},
		{name: "a partial window emptied", e: w(true, 1, 3, 5), size: 3, lines: []string{"-1"}, bad: true},
		{name: "a bad line", e: w(false, 1), size: 3, lines: []string{"*1"}, bad: true},
		{name: "a bad id", e: w(false, 1), size: 3, lines: []string{`-"x"`}, bad: true},
		{name: "no key", e: w(false, 1), size: 3, lines: []string{"+ 1"}, bad: true},
		{name: "a window without keys", e: queryEntry[int64]{IDs: []int64{1}}, size: 3, bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			page, more, ok := patchWindow(c.e, c.lower, c.size, c.lines)
			if ok == c.bad {
				t.Fatalf("ok = %v, want %v", ok, !c.bad)
			}
			if c.bad {
				return
			}
			var got []int64
			for _, r := range page {
				got = append(got, r.id)
			}
			if !slices.Equal(got, c.want) || more != c.more {
				t.Errorf("page %v, more %v; want %v, %v", got, more, c.want, c.more)
			}
		})
	}
}

// Order keys compare as the list's order, and give back their values.
func TestOrderKey(t *testing.T) {
	type row struct {
		N int64
		U uint16
		B bool
		T time.Time
	}
	s, err := schema.Parse(&row{}, &gosync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	q := &listQuery{patchable: true}
	for _, name := range []string{"N", "U", "B", "T"} {
		q.order = append(q.order, s.LookUpField(name))
	}
	q.desc = []bool{false, true, false, true}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	rows := []row{ // in the order: N asc, U desc, B asc, T desc
		{N: -5, U: 9, T: t0},
		{N: -5, U: 2, T: t0},
		{N: 0, U: 2, B: false, T: t0},
		{N: 0, U: 2, B: true, T: t0.Add(time.Hour)},
		{N: 0, U: 2, B: true, T: t0},
		{N: 0, U: 2, B: true, T: t0.Add(-100 * 365 * 24 * time.Hour)},
		{N: 7, U: 0, T: t0},
	}
	var keys []string
	for _, r := range rows {
		vals := []any{r.N, r.U, r.B, r.T}
		k, ok := q.orderKey(vals)
		if !ok {
			t.Fatalf("no key for %+v", r)
		}
		back, ok := q.keyValues(k)
		if !ok || back[0] != r.N || back[1] != r.U || back[2] != r.B || !back[3].(time.Time).Equal(r.T) {
			t.Errorf("key of %+v gives back %v", r, back)
		}
		keys = append(keys, k)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("keys out of order: %q", keys)
	}
	if _, ok := q.orderKey([]any{int64(1), uint16(1), true, t0.Add(time.Nanosecond)}); ok {
		t.Error("a time finer than a microsecond has a key: the database rounds it")
	}
	// A written time must be at offset 0: a timestamp column without time
	// zone keeps its wall clock.
	if !utcTimes([]any{int64(1), t0}) || utcTimes([]any{t0.In(time.FixedZone("CEST", 2*3600))}) {
		t.Error("utcTimes: want true at UTC, false at +02:00")
	}
}
