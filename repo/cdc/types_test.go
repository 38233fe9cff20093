package cdc_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// mood is a PostgreSQL enum: an OID no type map knows, decoded as text.
type mood string

// strs is a text[] column through a type of the service's own (a
// driver.Valuer and sql.Scanner), as GORM needs for arrays.
type strs []string

func (s strs) Value() (driver.Value, error) {
	b, err := pgtype.NewMap().Encode(pgtype.TextArrayOID, pgtype.TextFormatCode, []string(s), nil)
	return string(b), err
}

func (s *strs) Scan(src any) error {
	return pgtype.NewMap().SQLScanner((*[]string)(s)).Scan(src)
}

// typed has a column of each type GORM maps, each used by a cached query
// (filter or order), a unique key, or both.
type typed struct {
	ID      int64     `gorm:"primaryKey"`
	Small   int16     `gorm:"not null"`
	Num     float64   `gorm:"type:numeric(12,3);not null"`
	NumText string    `gorm:"type:numeric(12,3);not null"`
	Real    float32   `gorm:"not null"`
	Dbl     float64   `gorm:"type:double precision;not null"`
	Flag    bool      `gorm:"not null"`
	Name    string    `gorm:"type:varchar(40);not null"`
	Code    string    `gorm:"type:uuid;not null;uniqueIndex"`
	Blob    []byte    `gorm:"type:bytea"`
	Doc     string    `gorm:"type:jsonb;not null"`
	Day     time.Time `gorm:"type:date;not null"`
	Clock   string    `gorm:"type:time without time zone;not null"`
	Stamp   time.Time `gorm:"type:timestamp;not null;uniqueIndex"`
	Touched time.Time `gorm:"type:timestamptz;not null;uniqueIndex"`
	Span    string    `gorm:"type:interval;not null"`
	Status  mood      `gorm:"type:typed_mood;not null"`
	Tags    strs      `gorm:"type:text[]"`
	Note    *string
	Score   sql.NullInt64
	Extra   int64 `gorm:"not null"` // in no key: an update of it moves nothing
	Deleted gorm.DeletedAt
}

// typedQueries are the cached queries of the test, as repo.QueryOf.
var typedQueries = []repo.QueryOf{
	{Name: "small_touched", Where: []string{"small"}, Order: "touched DESC"},
	{Name: "flag_name_num", Where: []string{"flag", "name"}, Order: "num"},
	{Name: "code_stamp", Where: []string{"code"}, Order: "stamp DESC"},
	{Name: "day_dbl", Where: []string{"day"}, Order: "dbl DESC"},
	{Name: "status_doc_real", Where: []string{"status", "doc"}, Order: "real"},
	{Name: "blob_tags_note_score", Where: []string{"blob", "tags", "note", "score"}},
	{Name: "span_clock_numtext", Where: []string{"span", "clock", "num_text"}, Order: "touched"},
	{Name: "all_touched", Order: "touched DESC, small"},
}

// Plain SQL on a table with a column of each type, used as list filters,
// list orders and unique keys, with the default identity and with FULL:
// after each write and a Wait, every row, GetBy mapping, list and count
// read through the repository equals a direct database read, and no
// change was skipped or left undecoded. The server's TimeZone is not UTC,
// so timestamptz values come in the log at another offset than a load.
func TestInvalidator_columnTypes(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	e.exec(t, "CREATE TYPE typed_mood AS ENUM ('sad', 'ok', 'happy')")
	var dbName string
	if err := e.db.Raw("SELECT current_database()").Scan(&dbName).Error; err != nil {
		t.Fatal(err)
	}
	e.exec(t, fmt.Sprintf(`ALTER DATABASE %q SET timezone = 'Asia/Kathmandu'`, dbName))
	if err := e.db.AutoMigrate(&typed{}); err != nil {
		t.Fatal(err)
	}
	for _, identity := range []string{"default", "full"} {
		t.Run(identity, func(t *testing.T) {
			e.exec(t, "TRUNCATE typeds")
			e.exec(t, "ALTER TABLE typeds REPLICA IDENTITY "+identity)
			tr := newTypedRepo(t, e, "typeds_"+identity)
			inv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot + "_t_" + identity})
			if err != nil {
				t.Fatal(err)
			}
			if err := inv.Register(tr.r); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inv.Drop(context.Background()) })
			run(t, inv)

			step := func(what, sql string) {
				t.Helper()
				e.exec(t, sql)
				e.sync(t, inv)
				tr.check(t, e, what)
				if s := inv.Stats(); s.Skipped != 0 || s.Undecoded != 0 {
					t.Fatalf("%s: %d changes skipped, %d undecoded: %v", what, s.Skipped, s.Undecoded, s.LastError)
				}
			}
			e.sync(t, inv)          // the slot exists: every later write is in it
			tr.check(t, e, "empty") // caches the absences
			step("INSERT", `INSERT INTO typeds (id, small, num, num_text, real, dbl, flag, name, code, blob, doc, day, clock, stamp, touched, span, status, tags, note, score, extra)
				SELECT g, g % 3, g * 1.5, g * 0.25, g / 4.0, g * 2.5, g % 2 = 0, 'n' || (g % 2), gen_random_uuid(),
					CASE WHEN g % 3 = 0 THEN NULL ELSE decode(lpad(to_hex(g % 2), 2, '0'), 'hex') END,
					jsonb_build_object('k', g % 2), date '2026-12-01' + g % 2, time '12:00:00' + g % 2 * interval '90 minutes',
					timestamp '2026-12-04 20:41:34.665' + g * interval '1 second', timestamptz '2026-12-04 20:41:34.665+00' - g * interval '1 minute',
					(g % 2) * interval '1 day 2 hours', (ARRAY['sad', 'ok', 'happy']::typed_mood[])[1 + g % 3],
					CASE WHEN g % 4 = 0 THEN NULL ELSE ARRAY['a', 'b' || (g % 2)] END,
					CASE WHEN g % 2 = 0 THEN NULL ELSE 'note' END, CASE WHEN g % 3 = 0 THEN NULL ELSE g % 2 END, 0
				FROM generate_series(1, 12) g`)
			step("UPDATE touched (order)", "UPDATE typeds SET touched = touched + interval '1 hour' WHERE id = 5")
			step("UPDATE small (filter)", "UPDATE typeds SET small = small + 1 WHERE id = 6")
			step("UPDATE code (unique key, filter)", "UPDATE typeds SET code = gen_random_uuid() WHERE id = 7")
			step("UPDATE stamp (unique key, order)", "UPDATE typeds SET stamp = stamp - interval '1 day' WHERE id = 8")
			step("UPDATE num, real, dbl (orders)", "UPDATE typeds SET num = num + 100, real = real + 100, dbl = -dbl WHERE id IN (2, 3)")
			step("UPDATE flag, name, day, status, doc", `UPDATE typeds SET flag = NOT flag, name = 'moved', day = day + 7,
				status = 'happy', doc = '{"k": 9}' WHERE id = 4`)
			step("UPDATE blob, tags, note, score to NULL", "UPDATE typeds SET blob = NULL, tags = NULL, note = NULL, score = NULL WHERE id = 1")
			step("UPDATE blob, tags, note, score from NULL", `UPDATE typeds SET blob = '\x0a0b', tags = '{x,"y z"}', note = 'n', score = 7 WHERE id = 12`)
			step("UPDATE span, clock, num_text", "UPDATE typeds SET span = interval '3 days', clock = '23:59:59.5', num_text = 0.001 WHERE id = 9")
			step("UPDATE extra (no key)", "UPDATE typeds SET extra = extra + 1")
			step("soft DELETE", "UPDATE typeds SET deleted = now() WHERE id IN (10, 11)")
			step("undelete", "UPDATE typeds SET deleted = NULL WHERE id = 10")
			step("DELETE", "DELETE FROM typeds WHERE id IN (2, 11)")
		})
	}
}

// typedRepo is a repository of typed with its queries, and every key the
// test has seen, to read them all after each write.
type typedRepo struct {
	r       *repo.Repository[typed, int64]
	queries []*repo.Query[typed, int64]
	ids     map[int64]bool
	codes   map[string]bool
	stamps  map[time.Time]bool
	touched map[time.Time]bool
	filters []map[string][]any // per query, filter values by their JSON
}

func newTypedRepo(t *testing.T, e *env, name string) *typedRepo {
	t.Helper()
	r, err := repo.New[typed, int64](e.db, e.cache, &repo.Options{
		Name:   name,
		Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour},
		Filter: &bloom.Options{Namespace: e.ns, Capacity: 10_000, FalsePositiveRate: 0.001},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	tr := &typedRepo{r: r, ids: map[int64]bool{}, codes: map[string]bool{},
		stamps: map[time.Time]bool{}, touched: map[time.Time]bool{}}
	for _, qo := range typedQueries {
		qo.Policy = cacheaside.Policy{TTL: time.Hour}
		q, err := repo.NewQuery(r, qo)
		if err != nil {
			t.Fatal(err)
		}
		tr.queries = append(tr.queries, q)
		tr.filters = append(tr.filters, map[string][]any{})
	}
	if err := r.RebuildFilter(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tr
}

// check reads every row, mapping and list the test has seen through the
// repository and directly from the database, and fails on a difference.
func (tr *typedRepo) check(t *testing.T, e *env, what string) {
	t.Helper()
	ctx := context.Background()
	var rows []typed
	if err := e.db.Unscoped().Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		tr.ids[row.ID] = true
		tr.codes[row.Code] = true
		tr.stamps[row.Stamp] = true
		tr.touched[row.Touched] = true
		for i, qo := range typedQueries {
			vals := make([]any, len(qo.Where))
			for j, col := range qo.Where {
				vals[j] = fieldOf(row, col)
			}
			if slices.ContainsFunc(vals, func(v any) bool { return v == nil }) {
				continue // NULL lists are not cached
			}
			b, _ := json.Marshal(vals)
			tr.filters[i][string(b)] = vals
		}
	}
	tr.ids[99] = true // never inserted
	for id := range tr.ids {
		var want []typed
		if err := e.db.Where("id = ?", id).Find(&want).Error; err != nil {
			t.Fatal(err)
		}
		got, err := tr.r.Get(ctx, id)
		switch {
		case len(want) == 0 && !errors.Is(err, repo.ErrNotFound):
			t.Errorf("%s: Get(%d) = %+v, %v; want ErrNotFound", what, id, got, err)
		case len(want) == 1 && (err != nil || asJSON(got) != asJSON(want[0])):
			t.Errorf("%s: Get(%d) = %s, %v\nwant %s", what, id, asJSON(got), err, asJSON(want[0]))
		}
	}
	checkBy(t, e, tr, what, "code", tr.codes)
	checkBy(t, e, tr, what, "stamp", tr.stamps)
	checkBy(t, e, tr, what, "touched", tr.touched)
	for i, q := range tr.queries {
		qo := typedQueries[i]
		for _, vals := range tr.filters[i] {
			db := e.db.Model(&typed{})
			for j, col := range qo.Where {
				db = db.Where(clause.Eq{Column: clause.Column{Name: col}, Value: vals[j]})
			}
			order := qo.Order
			if order != "" {
				order += ", "
			}
			var want []int64
			if err := db.Order(order+"id").Pluck("id", &want).Error; err != nil {
				t.Fatal(err)
			}
			rows, _, err := q.List(ctx, repo.Page{Size: 100}, vals...)
			if err != nil {
				t.Fatalf("%s: %s.List(%v): %v", what, qo.Name, vals, err)
			}
			got := make([]int64, len(rows))
			for k, r := range rows {
				got[k] = r.ID
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s.List(%v) = %v, want %v", what, qo.Name, vals, got, want)
			}
			if n, err := q.Count(ctx, vals...); err != nil || n != int64(len(want)) {
				t.Errorf("%s: %s.Count(%v) = %d, %v; want %d", what, qo.Name, vals, n, err, len(want))
			}
		}
	}
}

// checkBy checks GetBy(column, v) for every value in vals.
func checkBy[V comparable](t *testing.T, e *env, tr *typedRepo, what, column string, vals map[V]bool) {
	t.Helper()
	for v := range vals {
		var want []typed
		if err := e.db.Where(clause.Eq{Column: clause.Column{Name: column}, Value: v}).Find(&want).Error; err != nil {
			t.Fatal(err)
		}
		got, err := tr.r.GetBy(context.Background(), column, v)
		switch {
		case len(want) == 0 && !errors.Is(err, repo.ErrNotFound):
			t.Errorf("%s: GetBy(%s, %v) = %+v, %v; want ErrNotFound", what, column, v, got, err)
		case len(want) == 1 && (err != nil || asJSON(got) != asJSON(want[0])):
			t.Errorf("%s: GetBy(%s, %v) = %s, %v\nwant %s", what, column, v, asJSON(got), err, asJSON(want[0]))
		}
	}
}

// fieldOf returns row's value of column col (a snake_case field name);
// nil for a NULL.
func fieldOf(row typed, col string) any {
	var name strings.Builder
	for part := range strings.SplitSeq(col, "_") {
		name.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	v := reflect.ValueOf(row).FieldByName(name.String())
	switch x := v.Interface().(type) {
	case *string:
		if x == nil {
			return nil
		}
	case []byte:
		if x == nil {
			return nil
		}
	case strs:
		if x == nil {
			return nil
		}
	case sql.NullInt64:
		if !x.Valid {
			return nil
		}
	}
	return v.Interface()
}

// asJSON is row as JSON with its times in UTC, to compare a cached row
// with a loaded one.
func asJSON(row typed) string {
	row.Day, row.Stamp, row.Touched = row.Day.UTC(), row.Stamp.UTC(), row.Touched.UTC()
	if row.Deleted.Valid {
		row.Deleted.Time = row.Deleted.Time.UTC()
	}
	b, _ := json.Marshal(row)
	return string(b)
}

// With REPLICA IDENTITY FULL the old row's NULL soft-delete column is a
// known value: an UPDATE of a column no query uses leaves every list
// alone (no fallback, no reload), while one of an order column reloads
// the row's list only; so with the default identity for rows the
// Invalidator remembers (Options.RecentRows). Remembering none, the old
// values are unknown and the same UPDATE bumps every list (the fallback),
// which shows the count can see a bump.
func TestInvalidator_fullIdentitySoftDelete(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&softItem{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name, identity string
		recentRows     int
	}{{"full", "full", 0}, {"default", "default", 0}, {"default_remembering_none", "default", -1}} {
		t.Run(v.name, func(t *testing.T) {
			full := v.identity == "full" || v.recentRows >= 0 // the old row known
			e.exec(t, "TRUNCATE soft_items")
			e.exec(t, "ALTER TABLE soft_items REPLICA IDENTITY "+v.identity)
			items, err := repo.New[softItem, int64](e.db, e.cache, &repo.Options{
				Name: "soft_items_" + v.name, Policy: cacheaside.Policy{TTL: time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			q, err := repo.NewQuery(items, repo.QueryOf{Name: "by_category", Where: []string{"category"}, Order: "touched DESC"})
			if err != nil {
				t.Fatal(err)
			}
			inv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot + "_s_" + v.name, RecentRows: v.recentRows})
			if err != nil {
				t.Fatal(err)
			}
			if err := inv.Register(items); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inv.Drop(context.Background()) })
			run(t, inv)
			e.sync(t, inv)
			e.exec(t, `INSERT INTO soft_items (id, category, touched, price)
				SELECT g, g % 2, now() - g * interval '1 minute', 1 FROM generate_series(1, 6) g`)
			e.exec(t, "UPDATE soft_items SET deleted_at = now() WHERE id = 6")
			e.sync(t, inv)
			cats := []int64{0, 1}
			loads := func() map[int64]uint64 {
				out := map[int64]uint64{}
				for _, c := range cats {
					before := q.Stats().Loads
					rows, _, err := q.List(ctx, repo.Page{Size: 10}, c)
					if err != nil {
						t.Fatal(err)
					}
					out[c] = q.Stats().Loads - before
					var got, want []int64
					for _, r := range rows {
						got = append(got, r.ID)
					}
					if err := e.db.Model(&softItem{}).Where("category = ?", c).Order("touched DESC, id").Pluck("id", &want).Error; err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Errorf("list %d = %v, the table's %v", c, got, want)
					}
				}
				return out
			}
			loads()
			step := func(what, sql string, wantFull map[int64]uint64) {
				t.Helper()
				s0 := q.Stats()
				e.exec(t, sql)
				e.sync(t, inv)
				got, s := loads(), q.Stats()
				want, fallbacks := wantFull, int64(0)
				if !full {
					want, fallbacks = map[int64]uint64{0: 1, 1: 1}, 1
				}
				if !mapsEqual(got, want) || s.Fallbacks-s0.Fallbacks != fallbacks {
					t.Errorf("%s: loads per list %v, %d fallbacks; want %v, %d (stats %+v)",
						what, got, s.Fallbacks-s0.Fallbacks, want, fallbacks, s)
				}
				if st := inv.Stats(); st.Skipped != 0 || st.Undecoded != 0 {
					t.Fatalf("%s: %d skipped, %d undecoded: %v", what, st.Skipped, st.Undecoded, st.LastError)
				}
			}
			step("UPDATE price of a live row", "UPDATE soft_items SET price = 2 WHERE id = 1", map[int64]uint64{0: 0, 1: 0})
			step("UPDATE price of a soft-deleted row", "UPDATE soft_items SET price = 3 WHERE id = 6", map[int64]uint64{0: 0, 1: 0})
			// Patched from the log: the page stays, the row moves up.
			step("UPDATE touched of a live row", "UPDATE soft_items SET touched = now() WHERE id = 2", map[int64]uint64{0: 0, 1: 0})
			step("soft delete", "UPDATE soft_items SET deleted_at = now() WHERE id = 4", map[int64]uint64{0: 0, 1: 0})
			step("undelete", "UPDATE soft_items SET deleted_at = NULL WHERE id = 6", map[int64]uint64{0: 0, 1: 0})
		})
	}
}

// softItem is a soft-deletable listed row, ordered by a timestamptz.
type softItem struct {
	ID        int64     `gorm:"primaryKey"`
	Category  int64     `gorm:"not null"`
	Touched   time.Time `gorm:"type:timestamptz;not null"`
	Price     int64     `gorm:"not null"`
	DeletedAt gorm.DeletedAt
}
