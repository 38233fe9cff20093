package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// comparison is how a cached value compares with the row in the database.
//
// The cached value is the service's Go model encoded by its codec, the row
// PostgreSQL's row_to_json: their field names differ in case and
// underscores (CreatedAt, created_at), so fields are matched on their names
// lower-cased without underscores, and only fields present on both sides are
// compared (a field the model leaves out, json:"-", or a column the model
// does not have, is listed, not judged). Values are compared as JSON
// documents: numbers by value (1 = 1.0), strings that are timestamps as
// instants (PostgreSQL's 2026-12-01T10:00:00.5+00:00 equals Go's
// 2026-12-01T10:00:00.5Z; a timestamp without a zone is taken as UTC),
// objects and arrays element by element.
type comparison struct {
	Agree       bool     `json:"agree"`
	Compared    int      `json:"compared"`
	Differ      []string `json:"differ,omitempty"`
	OnlyInCache []string `json:"only_in_cache,omitempty"`
	OnlyInDB    []string `json:"only_in_db,omitempty"`
}

// compareDocs compares a cached value with a database row.
func compareDocs(cached, row json.RawMessage) (comparison, error) {
	var c comparison
	cm, err := decodeObject(cached)
	if err != nil {
		return c, fmt.Errorf("cached value: %w", err)
	}
	rm, err := decodeObject(row)
	if err != nil {
		return c, fmt.Errorf("database row: %w", err)
	}
	cn, rn := byNorm(cm), byNorm(rm)
	for n, ck := range cn {
		rk, ok := rn[n]
		if !ok {
			c.OnlyInCache = append(c.OnlyInCache, ck)
			continue
		}
		c.Compared++
		if !sameJSON(cm[ck], rm[rk]) {
			c.Differ = append(c.Differ, rk)
		}
	}
	for n, rk := range rn {
		if _, ok := cn[n]; !ok {
			c.OnlyInDB = append(c.OnlyInDB, rk)
		}
	}
	slices.Sort(c.Differ)
	slices.Sort(c.OnlyInCache)
	slices.Sort(c.OnlyInDB)
	c.Agree = c.Compared > 0 && len(c.Differ) == 0
	return c, nil
}

func decodeObject(b json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}

// byNorm maps each key's normal form to the key.
func byNorm(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k := range m {
		out[strings.ToLower(strings.ReplaceAll(k, "_", ""))] = k
	}
	return out
}

// sameJSON compares two decoded JSON values (see comparison).
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameNumber(x, y)
	case string:
		y, ok := b.(string)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		tx, ok1 := parseTime(x)
		ty, ok2 := parseTime(y)
		return ok1 && ok2 && tx.Equal(ty)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b // bool, nil
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, ok1 := new(big.Rat).SetString(string(a))
	y, ok2 := new(big.Rat).SetString(string(b))
	return ok1 && ok2 && x.Cmp(y) == 0
}

// timeLayouts are the timestamp forms of Go's encoding/json and of
// PostgreSQL's row_to_json (timestamptz, timestamp, date).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"}

func parseTime(s string) (time.Time, bool) {
	if len(s) < 10 || s[4] != '-' {
		return time.Time{}, false
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
