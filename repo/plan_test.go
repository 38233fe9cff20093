package repo

import (
	"fmt"
	"slices"
	"testing"
)

// TestPlanChange covers every kind of change × (no unique key, one, two)
// × (filters on, off) × (old values known, unknown) × (earlier upkeep
// known applied, as for repo/cdc; or not, as for a repository's writes).
// Each case states the plan of a model with two unique keys, A (whose
// value changes) and B (whose value stays); the one-key model is the same
// with A alone, the key-less one with neither, and without filters nothing
// is added. want is the plan in commit order; repair, when not nil, the
// plan of a write that cannot know earlier upkeep applied: the row's id
// and every known value added to the filters, every known value's mapping
// dropped.
func TestPlanChange(t *testing.T) {
	k := func(id string, uks ...string) *rowKeys {
		r := &rowKeys{id: id}
		if uks != nil {
			r.uks = make([]oldKey, len(uks))
			for i, v := range uks {
				r.uks[i] = oldKey{key: v, ok: v != ""} // "" stands for NULL
			}
		}
		return r
	}
	type want struct {
		ids, filterIDs []string
		maps, adds     [2][]string // per lookup A, B
	}
	cases := []struct {
		name          string
		before, after *rowKeys
		want          want
		repair        *want
	}{
		{"insert", nil, k("1", "a2", "b"),
			want{ids: []string{"1"}, filterIDs: []string{"1"}, maps: [2][]string{{"a2"}, {"b"}}, adds: [2][]string{{"a2"}, {"b"}}}, nil},
		{"update/old known", k("1", "a1", "b"), k("1", "a2", "b"),
			want{ids: []string{"1"}, maps: [2][]string{{"a1", "a2"}, nil}, adds: [2][]string{{"a2"}, nil}},
			&want{ids: []string{"1"}, filterIDs: []string{"1"}, maps: [2][]string{{"a1", "a2"}, {"b"}}, adds: [2][]string{{"a2"}, {"b"}}}},
		{"update/old unknown", k("1"), k("1", "a2", "b"),
			want{ids: []string{"1"}, maps: [2][]string{{"a2"}, {"b"}}, adds: [2][]string{{"a2"}, {"b"}}},
			&want{ids: []string{"1"}, filterIDs: []string{"1"}, maps: [2][]string{{"a2"}, {"b"}}, adds: [2][]string{{"a2"}, {"b"}}}},
		{"update/to NULL", k("1", "a1", "b"), k("1", "", "b"),
			want{ids: []string{"1"}, maps: [2][]string{{"a1"}, nil}},
			&want{ids: []string{"1"}, filterIDs: []string{"1"}, maps: [2][]string{{"a1"}, {"b"}}, adds: [2][]string{nil, {"b"}}}},
		{"update/from NULL", k("1", "", "b"), k("1", "a2", "b"),
			want{ids: []string{"1"}, maps: [2][]string{{"a2"}, nil}, adds: [2][]string{{"a2"}, nil}},
			&want{ids: []string{"1"}, filterIDs: []string{"1"}, maps: [2][]string{{"a2"}, {"b"}}, adds: [2][]string{{"a2"}, {"b"}}}},
		{"update/new primary key", k("1", "a1", "b"), k("2", "a2", "b"),
			want{ids: []string{"1", "2"}, filterIDs: []string{"2"}, maps: [2][]string{{"a1", "a2"}, {"b"}}, adds: [2][]string{{"a2"}, {"b"}}}, nil},
		{"upsert/existence unknown", k(""), k("1", "a2", "b"),
			want{ids: []string{"1"}, filterIDs: []string{"1"}, maps: [2][]string{{"a2"}, {"b"}}, adds: [2][]string{{"a2"}, {"b"}}}, nil},
		{"upsert/id unknown", nil, k("", "a2", "b"),
			want{maps: [2][]string{{"a2"}, {"b"}}, adds: [2][]string{{"a2"}, {"b"}}}, nil},
		{"delete/old known", k("1", "a1", "b"), nil,
			want{ids: []string{"1"}, maps: [2][]string{{"a1"}, {"b"}}}, nil},
		{"delete/old unknown", k("1"), nil,
			want{ids: []string{"1"}}, nil},
	}
	for _, c := range cases {
		for nk := range 3 {
			for _, filters := range []bool{false, true} {
				for _, applied := range []bool{true, false} {
					t.Run(fmt.Sprintf("%s/%d keys/filters %v/earlier applied %v", c.name, nk, filters, applied), func(t *testing.T) {
						s := shape{filter: filters, filters: slices.Repeat([]bool{filters}, nk)}
						got := planChange(rowChange{before: trim(c.before, nk), after: trim(c.after, nk), earlierApplied: applied}, s)
						w := c.want
						if !applied && c.repair != nil {
							w = *c.repair
						}
						if !filters {
							w.filterIDs = nil
							w.adds = [2][]string{}
						}
						check := func(what string, got, want []string) {
							t.Helper()
							if !slices.Equal(got, want) {
								t.Errorf("%s = %q, want %q", what, got, want)
							}
						}
						check("ids", got.ids, w.ids)
						check("filterIDs", got.filterIDs, w.filterIDs)
						if len(got.maps) != nk || len(got.adds) != nk {
							t.Fatalf("plan has %d maps and %d adds for %d keys", len(got.maps), len(got.adds), nk)
						}
						for i := range nk {
							check(fmt.Sprintf("maps[%d]", i), got.maps[i], w.maps[i])
							check(fmt.Sprintf("adds[%d]", i), got.adds[i], w.adds[i])
						}
					})
				}
			}
		}
	}
}

// The list cells of TestPlanChange: one declared query, whose filter value
// is where and whose order (and soft-delete) values are rest.
func TestPlanChange_lists(t *testing.T) {
	l := func(id, where, rest string) *rowKeys {
		return &rowKeys{id: id, lists: []listKey{{where: where, rest: rest, ok: true}}}
	}
	unknown := func(id string) *rowKeys { return &rowKeys{id: id} }
	cases := []struct {
		name          string
		before, after *rowKeys
		lists         []string
		all           bool
	}{
		{"insert", nil, l("1", "(7)", "a"), []string{"(7)"}, false},
		{"delete/old known", l("1", "(3)", "a"), nil, []string{"(3)"}, false},
		{"delete/old unknown", unknown("1"), nil, nil, true},
		{"update/move 3 to 7", l("1", "(3)", "a"), l("1", "(7)", "a"), []string{"(3)", "(7)"}, false},
		{"update/reorder", l("1", "(3)", "a"), l("1", "(3)", "b"), []string{"(3)"}, false},
		{"update/outside filter and order", l("1", "(3)", "a"), l("1", "(3)", "a"), nil, false},
		{"update/old unknown", unknown("1"), l("1", "(3)", "a"), nil, true},
		{"update/new primary key", l("1", "(3)", "a"), l("2", "(3)", "a"), []string{"(3)"}, false},
		{"upsert/existence unknown, old known", l("", "(3)", "a"), l("1", "(3)", "a"), nil, false},
		{"query declared after the read", &rowKeys{id: "1"}, l("1", "(3)", "a"), nil, true},
	}
	// Lists keep one rule whether earlier upkeep is known applied or not.
	for _, c := range cases {
		for _, applied := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/earlier applied %v", c.name, applied), func(t *testing.T) {
				got := planChange(rowChange{before: c.before, after: c.after, earlierApplied: applied}, shape{lists: 1})
				if len(got.lists) != 1 || len(got.allLists) != 1 {
					t.Fatalf("plan has %d lists for 1 query", len(got.lists))
				}
				if !slices.Equal(got.lists[0], c.lists) || got.allLists[0] != c.all {
					t.Errorf("lists = %q, all %v; want %q, all %v", got.lists[0], got.allLists[0], c.lists, c.all)
				}
			})
		}
	}
	// A writer whose table repo/cdc feeds re-asserts the place of a row it
	// leaves where it was (the log's line that put it there may still be
	// on its way), unless the row is soft-deleted (in no list); a move is
	// planned as without it.
	gone := func(id, where, rest string) *rowKeys {
		k := l(id, where, rest)
		k.lists[0].gone = true
		return k
	}
	for _, c := range []struct {
		name          string
		before, after *rowKeys
		lists         []string
	}{
		{"outside filter and order", l("1", "(3)", "a"), l("1", "(3)", "a"), []string{"(3)"}},
		{"soft-deleted, stays so", gone("1", "(3)", "a"), gone("1", "(3)", "a"), nil},
		{"move 3 to 7", l("1", "(3)", "a"), l("1", "(7)", "a"), []string{"(3)", "(7)"}},
		{"reorder", l("1", "(3)", "a"), l("1", "(3)", "b"), []string{"(3)"}},
	} {
		got := planChange(rowChange{before: c.before, after: c.after, reassert: true}, shape{lists: 1})
		if !slices.Equal(got.lists[0], c.lists) || got.allLists[0] {
			t.Errorf("reassert, %s: lists = %q, all %v; want %q", c.name, got.lists[0], got.allLists[0], c.lists)
		}
	}
	// Without a declared query, no list work.
	if p := planChange(rowChange{after: l("1", "(3)", "a")}, shape{}); len(p.lists) != 0 || len(p.allLists) != 0 {
		t.Errorf("plan without queries: %v %v", p.lists, p.allLists)
	}
}

// trim keeps the first n unique keys of k.
func trim(k *rowKeys, n int) *rowKeys {
	if k == nil || k.uks == nil {
		return k
	}
	return &rowKeys{id: k.id, uks: k.uks[:n]}
}
