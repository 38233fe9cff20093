package main

import (
	"slices"
	"testing"
)

// TestCompareDocs: a Go model's JSON and PostgreSQL's row_to_json agree
// when their values do, whatever the field names' case and underscores,
// the timestamps' zones or the numbers' forms; and any changed value is
// named.
func TestCompareDocs(t *testing.T) {
	cached := `{"ID":42,"Slug":"lamp","Price":1999,"UpdatedAt":"2026-12-01T10:00:00.5Z","Tags":["a","b"],"Meta":{"w":1.5},"Secret":"x"}`
	for _, c := range []struct {
		name, row   string
		agree       bool
		differ      []string
		onlyInCache []string
		onlyInDB    []string
	}{
		{"same", `{"id":42,"slug":"lamp","price":1999.0,"updated_at":"2026-12-01T11:00:00.500+01:00","tags":["a","b"],"meta":{"w":1.50},"deleted_at":null}`,
			true, nil, []string{"Secret"}, []string{"deleted_at"}},
		{"price", `{"id":42,"slug":"lamp","price":2000,"updated_at":"2026-12-01T10:00:00.5+00:00","tags":["a","b"],"meta":{"w":1.5}}`,
			false, []string{"price"}, []string{"Secret"}, nil},
		{"time and nested", `{"id":42,"slug":"lamp","price":1999,"updated_at":"2026-12-01T10:00:01.5+00:00","tags":["b","a"],"meta":{"w":2}}`,
			false, []string{"meta", "tags", "updated_at"}, []string{"Secret"}, nil},
		{"type", `{"id":"42","slug":"lamp","price":1999,"updated_at":"2026-12-01T10:00:00.5Z","tags":["a","b"],"meta":{"w":1.5}}`,
			false, []string{"id"}, []string{"Secret"}, nil},
		{"nothing in common", `{"a":1}`, false, nil, nil, []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := compareDocs([]byte(cached), []byte(c.row))
			if err != nil {
				t.Fatal(err)
			}
			if got.Agree != c.agree || !slices.Equal(got.Differ, c.differ) || !slices.Equal(got.OnlyInDB, c.onlyInDB) ||
				(c.onlyInCache != nil && !slices.Equal(got.OnlyInCache, c.onlyInCache)) {
				t.Fatalf("compareDocs = %+v", got)
			}
		})
	}
	if _, err := compareDocs([]byte(`[1]`), []byte(`{}`)); err == nil {
		t.Fatal("a cached array compared as an object")
	}
}
