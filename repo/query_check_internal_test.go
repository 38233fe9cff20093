package repo

import (
	"context"
	gosync "sync"
	"testing"

	"gorm.io/gorm/schema"
)

// checkRow has a filter column of each kind holds compares, and a string.
type checkRow struct {
	ID   int64
	Cat  int32
	Ptr  *int64
	Flag bool
	Size uint8
	Tier myTier
	Name string
}

type myTier int

func TestListQuery_holds(t *testing.T) {
	sch, err := schema.Parse(&checkRow{}, &gosync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	query := func(cols ...string) *listQuery {
		q := &listQuery{}
		for _, c := range cols {
			q.where = append(q.where, sch.LookUpField(c))
		}
		q.checkable = true
		for _, f := range q.where {
			q.checkable = q.checkable && exactFilter(f)
		}
		return q
	}
	seven := int64(7)
	row := &checkRow{Cat: 3, Ptr: &seven, Flag: true, Size: 200, Tier: 2, Name: "a"}
	eight := int64(8)
	for _, c := range []struct {
		name string
		q    *listQuery
		vals []any
		want bool
	}{
		{"int32 equal", query("Cat"), []any{int32(3)}, true},
		{"int32 other", query("Cat"), []any{int32(4)}, false},
		{"pointer equal", query("Ptr"), []any{&seven}, true},
		{"pointer other", query("Ptr"), []any{&eight}, false},
		{"bool other", query("Flag"), []any{false}, false},
		{"uint8 equal", query("Size"), []any{uint8(200)}, true},
		{"named int other", query("Tier"), []any{myTier(1)}, false},
		{"two columns, second other", query("Cat", "Flag"), []any{int32(3), false}, false},
		{"two columns equal", query("Cat", "Flag"), []any{int32(3), true}, true},
		{"string: not checked", query("Name"), []any{"b"}, true},
		{"string beside an int: not checked", query("Cat", "Name"), []any{int32(4), "a"}, true},
	} {
		if got := c.q.holds(ctx, c.vals, row); got != c.want {
			t.Errorf("%s: holds = %v, want %v", c.name, got, c.want)
		}
	}
	nilPtr := &checkRow{Cat: 3}
	if query("Ptr").holds(ctx, []any{&seven}, nilPtr) {
		t.Error("a NULL filter value holds in a list of 7")
	}
}
